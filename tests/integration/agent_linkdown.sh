#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# What a send to a node whose link went down reports (issue 46, defects 3
# and 4).  A received-mode send that was deposited on node 1, whose agent
# then dies, must say "outcome unknown" (ECONNRESET: the message is in the
# channel), never EHOSTDOWN, which says nothing was sent; a send to the node
# while it is down says EHOSTDOWN ("nothing was sent"), and so does an
# immediately send, which used to return 0 and drop the message.
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
. "$(dirname "$0")/lib/two_agents.sh" linkdown
link_down() { ! links_up "$1"; }
deposited() { [ "$(A 1 -j agent poll c | jq .count)" = 1 ]; }
start_two
A 1 agent chan create c || fail "create c"
echo hello >"$T/msg"

# Deposited, then the target's agent dies before anyone takes it: outcome unknown.
rc=0
A 0 agent send 1/c "$T/msg" --mode=received --timeout=30000 2>"$T/err.received" &
sender=$!
wait_for deposited || fail "the received-mode send was not deposited: $(A 1 agent poll c)"
kill -9 "$(cat "$T/a1/agent.1.pid")"
wait $sender || rc=$?
[ $rc = 1 ] || fail "the received-mode send exited $rc: $(cat "$T/err.received")"
grep -q "may or may not have been done" "$T/err.received" ||
	fail "a deposited message whose answer was lost was reported as: $(cat "$T/err.received")"
wait_for link_down 0 || fail "node 0 did not notice node 1's agent died: $(A 0 agent status)"

# While the link is down: certainly not sent, in every mode.
for mode in buffered deposited immediately; do
	rc=0
	A 0 agent send 1/c "$T/msg" --mode=$mode --timeout=5000 2>"$T/err.$mode" || rc=$?
	[ $rc = 1 ] || fail "a $mode send to a node that is down exited $rc (the message is lost)"
	grep -q "nothing was sent" "$T/err.$mode" || fail "a $mode send to a down node said: $(cat "$T/err.$mode")"
done
A 0 -q agent stop || fail "stop 0"
echo "agent linkdown: unknown outcome and not sent are told apart"
