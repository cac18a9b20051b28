#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The agent's bad input (issue 44, N15 and N10): each case is refused at
# once with a message naming the option at fault, exit 2 for a usage error.
#   chan create --capacity=0 / --bytes=0 / --max-msg=0 (took the defaults),
#   --bytes=4294967296 (blamed the channel name), --rank=-1 (ran as rank 0),
#   a node twice in --hosts, --hostfile=/dev/zero (read forever), an option
#   of another action (send --capacity=5), `agent stop` with no agent (exit
#   0), and a FIFO planted as the agent's log (start hung forever).
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
dir=$(mktemp -d /tmp/rdmatool-agent-usage.XXXXXX)
export RDMATOOL_AGENT_DIR=$dir/agent RDMATOOL_AGENT_KEY=$dir/key RDMATOOL_STATS=0
mkdir -m 700 "$RDMATOOL_AGENT_DIR"
cleanup() {
	for f in "$RDMATOOL_AGENT_DIR"/agent.*.pid; do
		[ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null
	done
	rm -rf "$dir"
}
trap cleanup EXIT
run() { # EXPECTED-EXIT PATTERN ARGS...: rdmatool ARGS exits EXPECTED-EXIT within 10 s, stderr matching PATTERN
	local want=$1 pattern=$2 rc=0
	shift 2
	timeout 10 "$RDMATOOL" "$@" >"$dir/out" 2>"$dir/err" || rc=$?
	[ $rc = "$want" ] || fail "rdmatool $* exited $rc, want $want: $(cat "$dir/err")"
	[ -z "$pattern" ] || grep -q -e "$pattern" "$dir/err" || fail "rdmatool $*: no '$pattern' in: $(cat "$dir/err")"
}

run 2 '--capacity=0' agent chan create c --capacity=0
run 2 '--bytes=0' agent chan create c --bytes=0
run 2 '--max-msg=0' agent chan create c --max-msg=0
run 2 '--bytes=4294967296 is too large' agent chan create c --bytes=4294967296
run 2 '--bytes=100 cannot hold' agent chan create c --bytes=100
run 2 '--capacity is not an option of .chan list' agent chan list --capacity=5
[ -z "$(ls "$RDMATOOL_AGENT_DIR" | grep chan.)" ] || fail "a refused create made a channel"
run 0 '' agent chan create c --capacity=1 --bytes=64 --max-msg=48
run 2 '--rank=-1 is out of range' agent foreground --rank=-1
run 2 'twice' agent foreground --hosts=127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7000
run 2 '/dev/zero is not a regular file' agent foreground --hostfile=/dev/zero
mkfifo "$dir/fifo"
run 2 'is not a regular file' agent start --hostfile="$dir/fifo"
run 2 '--capacity is not an option of .send' agent send c --capacity=5
run 2 '--mode is not an option of .recv' agent recv c --mode=received
run 2 '--hosts' agent status --hosts=a,b
run 3 'no agent runs' agent stop

# A FIFO where the log goes: refused at once, not a start that waits for a reader forever.
mkfifo "$RDMATOOL_AGENT_DIR/agent.0.log"
run 1 'FIFO' agent start
rm "$RDMATOOL_AGENT_DIR/agent.0.log"
run 0 'started' agent start
run 0 'stopped' agent stop
echo "agent usage: every bad input refused, naming the option"
