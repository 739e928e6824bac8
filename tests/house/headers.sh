# Every public header compiles on its own, as C99 -pedantic and as C++17,
# and every example as C99 (the README promises one header, and users
# include the parts they need).  CC and CXX name the compilers.
set -u
src=${1:?usage: headers.sh SRC_DIR}
CC=${CC:-cc}; CXX=${CXX:-c++}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
for h in "$src"/include/*.h; do
  printf '#include "%s"\ntypedef int bp_nonempty;\n' "$(basename "$h")" >"$tmp/h.c"
  cp "$tmp/h.c" "$tmp/h.cpp"
  $CC -std=c99 -pedantic -Wall -Wextra -Werror -fsyntax-only -I"$src/include" "$tmp/h.c" 2>"$tmp/err" ||
    { echo "FAIL: $(basename "$h") as C99:"; cat "$tmp/err"; fail=1; }
  if command -v "$CXX" >/dev/null; then
    $CXX -std=c++17 -pedantic -Wall -Wextra -Werror -fsyntax-only -I"$src/include" "$tmp/h.cpp" 2>"$tmp/err" ||
      { echo "FAIL: $(basename "$h") as C++17:"; cat "$tmp/err"; fail=1; }
  fi
done
for e in "$src"/examples/*.c; do
  $CC -std=c99 -pedantic -Wall -Wextra -Werror -fsyntax-only -I"$src/include" "$e" 2>"$tmp/err" ||
    { echo "FAIL: $(basename "$e") as C99:"; cat "$tmp/err"; fail=1; }
done
echo "headers: $(ls "$src"/include/*.h | wc -l) headers and $(ls "$src"/examples/*.c | wc -l) examples checked"
exit $fail
