# Unknown keys in a graph file are errors that name the key, where it is and
# the nearest known key: a misspelt "outputs" must not plan a graph with no
# outputs.
. "$(dirname "$0")/harness.bash"
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed"; exit 0; }
"$CLI" gen chain --nodes 3 -o "$tmp/k.json" || bad "gen"
keycase() {  # PYTHON-EDIT EXPECTED-MESSAGE
  python3 -c "import json,sys; g=json.load(open(sys.argv[1])); $1; json.dump(g, open(sys.argv[2], 'w'))" "$tmp/k.json" "$tmp/k2.json"
  local rc=0; "$CLI" plan "$tmp/k2.json" -q 2>"$tmp/kerr" || rc=$?
  [ "$rc" = 2 ] || bad "unknown key ($1): exit $rc, expected 2"
  grep -qF -- "$2" "$tmp/kerr" || bad "unknown key ($1): message: $(cat "$tmp/kerr")"
}
keycase "g['output'] = g.pop('outputs')" 'the top level: unknown key "output" (did you mean "outputs"?)'
keycase "g['tensors'][1]['dtyp'] = 'f32'" 'tensors[1] ("l0.weight"): unknown key "dtyp" (did you mean "dtype"?)'
keycase "g['ops'][0]['weight'] = 1" 'ops[0] ("l0"): unknown key "weight"'
keycase "g['ops'][0]['Inputs'] = g['ops'][0]['inputs']" '(did you mean "inputs"?)'
"$CLI" plan "$tmp/k.json" -q || bad "the unedited graph does not plan"
exit $fail
