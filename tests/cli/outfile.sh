# Output files and the plan cache cannot be turned against the user: -o
# refuses special files and the input, keeps hard links, modes and symlinks,
# leaves no temporary behind and removes stale ones; a full stdout is an
# error; a FIFO or a symlink at a cache key neither hangs nor is followed.
. "$(dirname "$0")/harness.bash"
cd "$tmp" || exit 1
"$CLI" gen chain -o g.json || bad "gen"
cp g.json g.orig
expect() {  # RC DESCRIPTION CMD...: run CMD (20 s at most), expect exit RC
  local rc=$1 what=$2 got=0; shift 2
  timeout 20 "$@" >out 2>err || got=$?
  [ "$got" = "$rc" ] || bad "$what: exit $got, expected $rc: $(cat err)"
}
expect 2 "-o the input" "$CLI" plan g.json -o g.json -q
cmp -s g.json g.orig || bad "-o the input changed the input"
grep -q "is the input file" err || bad "-o the input: message: $(cat err)"
mkfifo fifo
expect 2 "-o a FIFO" "$CLI" plan g.json -o fifo -q
[ -p fifo ] || bad "-o a FIFO replaced the FIFO"
grep -q "not a regular file (a FIFO)" err || bad "-o a FIFO: message: $(cat err)"
mkdir d
expect 2 "-o a directory" "$CLI" plan g.json -o d -q
# a device: refused, and it stays the device (as root -o /dev/null would have replaced /dev/null)
expect 2 "-o a device" "$CLI" plan g.json -o /dev/null -q
[ -c /dev/null ] || bad "-o /dev/null replaced the device"
grep -q "not a regular file" err || bad "-o a device: message: $(cat err)"
echo old >h1; chmod 640 h1; ln h1 h2
expect 0 "-o over a hard link" "$CLI" plan g.json -o h1 -q
[ "$(stat -c %i h1)" = "$(stat -c %i h2)" ] || bad "-o broke a hard link"
grep -q bufplan-plan h2 || bad "-o over a hard link: the other link does not see the plan"
[ "$(stat -c %a h1)" = 640 ] || bad "-o reset mode 640 to $(stat -c %a h1)"
echo old >real; ln -s real link
expect 0 "-o a symlink" "$CLI" plan g.json -o link -q
[ -L link ] || bad "-o replaced a symlink with a file"
grep -q bufplan-plan real || bad "-o a symlink: the target does not hold the plan"
touch -d '10 minutes ago' .stale.json.bptmp.AAAAAA
touch .fresh.json.bptmp.BBBBBB
expect 0 "-o new" "$CLI" plan g.json -o new.json -q
[ -e .stale.json.bptmp.AAAAAA ] && bad "a stale temporary was not removed"
[ -e .fresh.json.bptmp.BBBBBB ] || bad "a fresh temporary (another writer's) was removed"
ls -a | grep -v '^\.fresh' | grep -q 'bptmp' && bad "a temporary was left behind: $(ls -a)"
if [ -w /dev/full ] || [ -e /dev/full ]; then
  got=0; "$CLI" plan g.json >/dev/full 2>err || got=$?
  [ "$got" != 0 ] || bad "a report to a full stdout exits 0"
  grep -q "stdout: write error" err || bad "full stdout: message: $(cat err)"
fi
# the plan cache: a FIFO and a symlink at the key
mkdir cache
expect 0 "cache miss" "$CLI" plan g.json --cache cache -q
key=$(ls cache/*.bpc)
rm "$key"; mkfifo "$key"
expect 0 "a FIFO at a cache key" "$CLI" plan g.json --cache cache
grep -q "not a regular file" err || bad "a FIFO at a cache key: no warning: $(cat err)"
rm -f "$key"; cp g.json secret; ln -s "$tmp/secret" "$key"
expect 0 "a symlink at a cache key" "$CLI" plan g.json --cache cache
cmp -s secret g.json || bad "the cache wrote through a symlink"
touch -d '10 minutes ago' cache/.old.tmp.CCCCCC
expect 0 "cache write" "$CLI" plan g.json --cache cache -s given -q
[ -e cache/.old.tmp.CCCCCC ] && bad "a stale cache temporary was not removed"
exit $fail
