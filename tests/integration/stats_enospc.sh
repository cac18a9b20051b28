#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# A full tmpfs under the stats segments (any user can fill /dev/shm; issue 44 N7): bench and walk say
# once that there is no segment and why, and run on; before, the first write into the segment's pages
# killed them with SIGBUS (bench exit 135).  The tmpfs is a 64 KiB one of our own, mounted in a private
# mount namespace (unshare -m) and filled; RDMATOOL_STATS_DIR points the segments at it.
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "skipped: needs root to mount a tmpfs in a private mount namespace"; exit 77; }
command -v unshare >/dev/null || fail "unshare missing (util-linux)"
dir=$(mktemp -d /tmp/rdmatool-stats-enospc.XXXXXX)
trap 'rm -rf "$dir"' EXIT
mkdir "$dir/shm"

cat >"$dir/inside.sh" <<'IN'
set -u
mnt=$1 out=$2
mount -t tmpfs -o size=64k,mode=1777 rdmatool-test "$mnt" || exit 90
# Fill it to the last byte.
dd if=/dev/zero of="$mnt/fill" bs=4096 2>/dev/null
head -c 100000 /dev/zero >>"$mnt/fill" 2>/dev/null
[ "$(df --output=avail "$mnt" | tail -n 1 | tr -d ' ')" = 0 ] || exit 91
export RDMATOOL_STATS_DIR=$mnt
"$RDMATOOL" bench write_lat -n 50 --lock=striped >"$out/bench.out" 2>"$out/bench.err"
echo $? >"$out/bench.rc"
"$RDMATOOL" walk --clients=2 --duration=1 --seed=1 >"$out/walk.out" 2>"$out/walk.err"
echo $? >"$out/walk.rc"
umount "$mnt"
IN
unshare -m --propagation private bash "$dir/inside.sh" "$dir/shm" "$dir" || fail "the private tmpfs: exit $?"
rc=$(cat "$dir/bench.rc")
[ "$rc" -eq 0 ] || fail "bench on a full tmpfs: exit $rc: $(cat "$dir/bench.err")"
grep -q "no stats segment in $dir/shm (No space left on device: the file system is full)" "$dir/bench.err" ||
	fail "bench did not say why: $(cat "$dir/bench.err")"
[ "$(grep -c "no stats segment" "$dir/bench.err")" -eq 1 ] || fail "bench said it more than once: $(cat "$dir/bench.err")"
grep -q '^striped' "$dir/bench.out" || fail "bench printed no result: $(cat "$dir/bench.out")"
rc=$(cat "$dir/walk.rc")
[ "$rc" -eq 0 ] || fail "walk on a full tmpfs: exit $rc: $(cat "$dir/walk.err" "$dir/walk.out")"
[ "$(grep -c "no stats segment in $dir/shm" "$dir/walk.err")" -eq 1 ] || fail "walk: $(cat "$dir/walk.err")"
echo "full tmpfs: ok"
