#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# cqstat run by root in a stats directory that another user ("nobody") can write, as /dev/shm is
# (issue 15 items 1-4): nobody cannot write or truncate root's segment; a FIFO, a symlink and a forged
# segment that nobody plants neither hang, crash nor steer root's cqstat or cqstat --clean.
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "skipped: needs root to act as a second user (nobody)"; exit 77; }
command -v setpriv >/dev/null || fail "setpriv missing (util-linux); run 'make deps'"
PUBLISHER=$BUILD/tests/tools/stats_publisher
[ -x "$PUBLISHER" ] || fail "$PUBLISHER not built (make check builds it)"

dir=$(mktemp -d /tmp/rdmatool-cqstat-hostile.XXXXXX)
chmod 1777 "$dir" # world-writable and sticky, like /dev/shm
export RDMATOOL_STATS_DIR=$dir
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$@"; }

"$PUBLISHER" rootpub 2 1 0 >"$dir/pub.out" &
pub=$!
pids+=($pub)
for _ in $(seq 200); do grep -q '^ready ' "$dir/pub.out" && break; sleep 0.05; done
grep -q '^ready ' "$dir/pub.out" || fail "publisher never became ready"
seg=$dir/rdmatool-stats.$pub
[ "$(stat -c '%U %a' "$seg")" = "root 644" ] || fail "root's segment is $(stat -c '%U %a' "$seg"), want root 644"

# nobody can read root's segment but neither write nor truncate it (which would SIGBUS root).
as_nobody cat "$seg" >/dev/null || fail "nobody cannot read the segment (cqstat for everyone needs that)"
if as_nobody sh -c ": >>'$seg'" 2>/dev/null || as_nobody truncate -s 0 "$seg" 2>/dev/null; then
	fail "nobody could write or truncate root's segment"
fi
kill -0 $pub || fail "the publisher died"

# nobody plants: a FIFO under a live root process's name, a symlink under a dead pid's name pointing
# at a root file, and a forged segment for another live root process.
sleep 60 &
live=$!
pids+=($live)
sh -c 'exit 0' &
dead=$!
wait $dead
sleep 60 &
victim=$!
pids+=($victim)
as_nobody mkfifo "$dir/rdmatool-stats.$live"
echo "precious" >"$dir/precious"
as_nobody ln -s "$dir/precious" "$dir/rdmatool-stats.$dead"
# The forgery: a copy of root's real segment with the victim's pid in it, owned by nobody.
python3 - "$seg" "$dir/forged" "$victim" <<'PY'
import struct, sys
data = bytearray(open(sys.argv[1], "rb").read())
struct.pack_into("<i", data, 28, int(sys.argv[3]))  # stats_header.pid
open(sys.argv[2], "wb").write(data)
PY
chmod 644 "$dir/forged"
as_nobody cp "$dir/forged" "$dir/rdmatool-stats.$victim"
rm -f "$dir/forged"

timeout 10 "$RDMATOOL" -j cqstat >"$dir/out" 2>"$dir/err" || rc=$?
[ "${rc:-0}" -ne 124 ] || fail "cqstat hung (FIFO?)"
jq -e --argjson p "$pub" '[.processes[].pid] == [$p]' "$dir/out" >/dev/null ||
	fail "cqstat should list root's publisher only: $(cat "$dir/out")"
jq -e --argjson v "$victim" '.unreadable | map(select(.pid == $v)) | .[0].error == "not written by the process'"'"'s user"' \
	"$dir/out" >/dev/null || fail "the forged segment was not refused: $(cat "$dir/out")"
jq -e --argjson l "$live" '.unreadable | map(select(.pid == $l)) | length == 1' "$dir/out" >/dev/null ||
	fail "the FIFO was not reported: $(cat "$dir/out")"

rc=0
timeout 10 "$RDMATOOL" cqstat --clean >"$dir/out" 2>"$dir/err" || rc=$?
[ $rc -ne 124 ] || fail "cqstat --clean hung"
[ "$(cat "$dir/precious")" = precious ] || fail "--clean went through the symlink"
[ -L "$dir/rdmatool-stats.$dead" ] || fail "--clean removed nobody's symlink (not a segment of root's)"
[ -p "$dir/rdmatool-stats.$live" ] || fail "--clean removed the FIFO"
[ -e "$seg" ] || fail "--clean removed the live publisher's segment"
echo "cqstat hostile: ok"
