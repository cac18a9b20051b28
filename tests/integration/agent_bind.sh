#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The link port listens on the agent's own node address (issue 46 defect 6):
# two agents of this machine share one port on 127.0.0.1 and 127.0.0.2 (the
# old agents both bound 0.0.0.0, so the second could not start), link and
# move a message; neither listens on every address.  --bind=0.0.0.0 opens
# the port on every address again, and --bind is refused by other actions.
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
. "$(dirname "$0")/lib/two_agents.sh" bind
P=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
shared=127.0.0.1:$P,127.0.0.2:$P
listening() { # ADDR: something listens on ADDR:$P (ss prints the local address)
	ss -Hltn "sport = :$P" | awk '{print $4}' | grep -qx "$1:$P"
}
start_two "$shared"
listening 127.0.0.1 && listening 127.0.0.2 || fail "not listening on both addresses: $(ss -Hltn "sport = :$P")"
listening 0.0.0.0 && fail "an agent listens on every address: $(ss -Hltn "sport = :$P")"
A 1 agent chan create q || fail "create q"
echo hi | A 0 agent send 1/q --mode=deposited --timeout=5000 || fail "send over the shared port"
[ "$(A 1 agent recv q --timeout=5000)" = hi ] || fail "the message over the shared port"
for r in 0 1; do A $r -q agent stop || fail "stop $r"; done

rc=0
A 0 agent status --bind=0.0.0.0 2>"$T/err" || rc=$?
[ $rc = 2 ] && grep -q "not an option of 'status'" "$T/err" || fail "status took --bind: $rc $(cat "$T/err")"
A 0 -q agent start --hosts="$shared" --rank=0 --bind=0.0.0.0 || fail "start with --bind=0.0.0.0: $(tail -3 "$T/a0/agent.0.log")"
wait_for listening 0.0.0.0 || fail "--bind=0.0.0.0 does not listen on every address: $(ss -Hltn "sport = :$P")"
A 0 -q agent stop || fail "stop"
echo "agent bind: two agents share port $P on their own addresses"
