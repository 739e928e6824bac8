"""python3 -m bufplan ARGS: the bufplan CLI (bufplan/cli.py)."""
import sys

from .cli import main

sys.exit(main())
