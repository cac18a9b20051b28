#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# A full file system under the agent directory (issue 44 N7; any user can
# fill /dev/shm).  In a private mount namespace, the agent directory is on a
# 24 MiB tmpfs: a channel larger than the free space is refused at creation
# (ENOSPC, a clear message), a channel made before the file system filled up
# takes messages without SIGBUS (its pages were reserved when it was made;
# the old code died with exit 135), and `agent start` on the full file system
# says why it cannot start.  Needs a mount namespace (root): skipped where
# there is none.
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
if [ "${AGENT_FULLSHM_INNER:-}" != 1 ]; then
	if ! unshare -m true 2>/dev/null; then
		echo "SKIP: no mount namespace here (unshare -m needs root), so no private tmpfs to fill"
		exit 77
	fi
	AGENT_FULLSHM_INNER=1 exec unshare -m bash "$0" "$@"
fi
T=$(mktemp -d /tmp/rdmatool-agent-fullshm.XXXXXX)
mkdir "$T/shm"
mount -t tmpfs -o size=24m,mode=700 tmpfs "$T/shm" || fail "cannot mount a tmpfs in the namespace"
cleanup() {
	for f in "$T"/shm/agent/agent.*.pid; do
		[ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null
	done
	umount "$T/shm" 2>/dev/null || true
	rm -rf "$T"
}
trap cleanup EXIT
export RDMATOOL_AGENT_DIR=$T/shm/agent RDMATOOL_AGENT_KEY=$T/key RDMATOOL_STATS=0
mkdir -m 700 "$RDMATOOL_AGENT_DIR"
R() { timeout 20 "$RDMATOOL" "$@"; }

rc=0
R agent chan create big --bytes=$((32 << 20)) 2>"$T/err" || rc=$?
[ $rc = 1 ] && grep -q "no room" "$T/err" || fail "a 32 MiB channel on a 24 MiB file system: exit $rc: $(cat "$T/err")"
[ ! -e "$RDMATOOL_AGENT_DIR/chan.big" ] || fail "the refused channel was left behind"
R agent chan create small --bytes=$((1 << 20)) --max-msg=65536 || fail "a 1 MiB channel"
dd if=/dev/zero of="$T/shm/filler" bs=64k 2>/dev/null || true
[ "$(df --output=avail "$T/shm" | tail -1)" -lt 64 ] || fail "the file system did not fill: $(df "$T/shm")"
head -c 60000 /dev/urandom >"$T/msg"
for i in $(seq 12); do
	rc=0
	R agent send small "$T/msg" 2>"$T/err" || rc=$?
	[ $rc = 0 ] || fail "local send $i into a channel made before the file system filled: exit $rc: $(cat "$T/err")"
done
[ "$(R -j agent poll small | jq .count)" = 12 ] || fail "the channel does not hold the 12 messages"

rc=0
R agent start 2>"$T/start.err" || rc=$?
[ $rc = 1 ] && grep -q "No space left on device" "$T/start.err" ||
	fail "agent start on a full file system: exit $rc: $(cat "$T/start.err")"
rm "$T/shm/filler"
R -q agent start || fail "agent start once there is room"
R -q agent stop || fail "agent stop"
echo "agent fullshm: ENOSPC at creation, no SIGBUS after"
