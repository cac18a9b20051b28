#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# perftest's device flags on the agent (issue 47 item 4): two agents started with -d soft0 -x 1
# (GID index 1, which soft0's port 1 has) and --sl 3 open their links' endpoint on that path, say
# so in their logs, link and move a message.  A port, GID index or device the device lacks is
# refused before the agent starts (exit 2, naming the option), and so are values out of range;
# the flags belong to foreground and start only.
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
. "$(dirname "$0")/lib/two_agents.sh" path
for r in 0 1; do
	mkdir -m 700 "$T/a$r"
	A $r -q agent start --hosts="$hosts" --rank=$r -d soft0 -x 1 --sl 3 ||
		fail "agent $r did not start with -x 1: $(cat "$T/a$r/agent.$r.log" 2>/dev/null)"
done
for r in 0 1; do
	wait_for links_up $r || fail "the link of rank $r is not up: $(A $r agent status)"
	grep -q 'links on device soft0, port 1, GID index 1, SL 3, MTU the port.s$' "$T/a$r/agent.$r.log" ||
		fail "agent $r did not open its links on GID index 1: $(cat "$T/a$r/agent.$r.log")"
done
A 1 agent chan create q || fail "create q"
echo over-gid-1 | A 0 agent send 1/q --mode=deposited --timeout=5000 || fail "send over the -x 1 link"
[ "$(A 1 agent recv q --timeout=5000)" = over-gid-1 ] || fail "the message over the -x 1 link"
for r in 0 1; do A $r -q agent stop || fail "stop $r"; done

refused() { # OPTION-IN-MESSAGE ARGS...: agent start ARGS exits 2 naming the option, and no agent runs
	local want=$1 rc=0
	shift
	A 0 agent start --hosts="$hosts" --rank=0 "$@" >"$T/out" 2>"$T/err" || rc=$?
	[ $rc = 2 ] && grep -q -- "$want" "$T/err" || fail "agent start $*: exit $rc, $(cat "$T/err")"
	[ -z "$(ls "$T/a0"/agent.*.pid 2>/dev/null)" ] || fail "agent start $* left an agent running"
}
refused '--ib-port=9: soft0 has no such port' -i 9
refused '--gid-index=7: port 1 of soft0 has no such GID' -x 7
refused "no device 'nosuch'" -d nosuch
refused '--ib-port=0: give a port number from 1 to 255' --ib-port=0
refused '--sl=16: give a service level from 0 to 15' --sl=16
refused '--mtu=300: give 256, 512, 1024, 2048 or 4096' --mtu=300
rc=0
A 0 agent foreground -i 9 2>"$T/err" || rc=$?
[ $rc = 2 ] && grep -q -- '--ib-port=9' "$T/err" || fail "foreground -i 9: exit $rc, $(cat "$T/err")"
rc=0
A 0 agent status -x 1 2>"$T/err" || rc=$?
[ $rc = 2 ] && grep -q -- "--gid-index is not an option of 'status'" "$T/err" || fail "status took -x: $rc $(cat "$T/err")"
echo "agent path: -d soft0 -x 1 --sl 3 links on GID index 1; bad ports, GIDs and devices refused"
