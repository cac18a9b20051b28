#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# rdmatool agent start/status/stop: the round trip, a second agent refused,
# a SIGKILLed agent's pid file taken over, SIGTERM/SIGINT ending cleanly,
# clients told -ENOTCONN / -EHOSTDOWN instead of hanging, and the agent's
# counters in the stats segment.  Everything lives in private directories.
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v jq >/dev/null || fail "jq missing; run 'make deps'"

dir=$(mktemp -d /tmp/rdmatool-agent-test.XXXXXX)
export RDMATOOL_AGENT_DIR=$dir/agent RDMATOOL_STATS_DIR=$dir/stats RDMATOOL_AGENT_KEY=$dir/key
mkdir -m 700 "$RDMATOOL_AGENT_DIR" "$RDMATOOL_STATS_DIR"
cleanup() {
	# Every agent this test may have started, whatever rank, even if it failed half-way.
	for f in "$RDMATOOL_AGENT_DIR"/agent.*.pid; do
		[ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null
	done
	rm -rf "$dir"
}
trap cleanup EXIT

run() { # runs rdmatool with a deadline, capturing stdout, stderr and the exit status
	set +e
	timeout 20 "$RDMATOOL" "$@" >"$dir/out" 2>"$dir/err"
	rc=$?
	set -e
}

wait_until() { # CONDITION...: polls for up to 10 s
	for _ in $(seq 500); do
		"$@" && return 0
		sleep 0.02
	done
	return 1
}

# No agent: status says so with its documented exit status, in text and JSON.
run agent status
[ $rc -eq 3 ] || fail "status without agent exit $rc"
grep -q 'no agent runs' "$dir/out" || fail "status text: $(cat "$dir/out")"
run -j agent status
[ $rc -eq 3 ] && [ "$(jq .running "$dir/out")" = false ] || fail "status -j without agent: $rc $(cat "$dir/out")"

# start returns once the agent serves; status shows it.
run agent start --hosts=localhost,peer1:7000
[ $rc -eq 0 ] || fail "start exit $rc: $(cat "$dir/err")"
pid=$(cat "$RDMATOOL_AGENT_DIR/agent.0.pid")
kill -0 "$pid" || fail "agent $pid not running after start"
run -j agent status
[ $rc -eq 0 ] || fail "status exit $rc"
[ "$(jq .pid "$dir/out")" = "$pid" ] || fail "status pid: $(cat "$dir/out")"
[ "$(jq .nodes "$dir/out")" = 2 ] || fail "status nodes: $(cat "$dir/out")"
[ "$(jq -r '.peers[0].host' "$dir/out")" = peer1 ] || fail "status peers: $(cat "$dir/out")"

# A second agent for the same directory and rank is refused, clearly.
run agent start
[ $rc -eq 1 ] && grep -q "already runs.*pid $pid" "$dir/err" || fail "second start: $rc $(cat "$dir/err")"
run agent foreground
[ $rc -eq 1 ] && grep -q "already runs" "$dir/err" || fail "foreground next to start: $rc $(cat "$dir/err")"

# Requests for another node go through the gateway and fail fast: no link yet.
echo hi >"$dir/msg"
run agent send 1/q "$dir/msg" --timeout=2000
[ $rc -eq 1 ] && grep -q 'no link to that node' "$dir/err" || fail "remote send: $rc $(cat "$dir/err")"
run agent recv peer1/q --timeout=2000
[ $rc -eq 1 ] && grep -q 'no link to that node' "$dir/err" || fail "remote recv: $rc $(cat "$dir/err")"
run agent poll 7/q
[ $rc -eq 1 ] && grep -q 'no such node' "$dir/err" || fail "unknown node: $rc $(cat "$dir/err")"
run -j agent status
[ "$(jq .gateway.failed "$dir/out")" -ge 2 ] || fail "gateway counters: $(cat "$dir/out")"

# A client of another version (the segment's layout version differs) is told so, not "no agent".
set_gw_version() { # VERSION: the little-endian u32 after the 8-byte magic; prints the old one
	python3 - "$RDMATOOL_AGENT_DIR/gateway.0" "$1" <<'PY'
import struct, sys
with open(sys.argv[1], "r+b") as f:
    f.seek(8); old = struct.unpack("<I", f.read(4))[0]
    f.seek(8); f.write(struct.pack("<I", int(sys.argv[2])))
print(old)
PY
}
version=$(set_gw_version 9999)
run agent send 1/q "$dir/msg" --timeout=2000
set_gw_version "$version" >/dev/null
[ $rc -eq 1 ] && grep -q 'another rdmatool version' "$dir/err" || fail "version mismatch: $rc $(cat "$dir/err")"

# The agent's counters are in its stats segment, where cqstat finds them (published every 100 ms).
cqstat_shows_agent() {
	run -j cqstat
	[ $rc -eq 0 ] && jq -e --argjson p "$pid" \
		'.processes[] | select(.pid == $p) | .cqs[] | select(.kind == "agent" and .posted >= 2)' "$dir/out" >/dev/null
}
wait_until cqstat_shows_agent || fail "cqstat does not show the agent: $(cat "$dir/out" "$dir/err")"

# stop: SIGTERM, waits, reports; nothing of the agent's is left.
run agent stop
[ $rc -eq 0 ] && grep -q "pid $pid" "$dir/err" || fail "stop: $rc $(cat "$dir/err")"
gone() { ! kill -0 "$1" 2>/dev/null || grep -q '^[^)]*) [ZX]' "/proc/$1/stat" 2>/dev/null; }
gone "$pid" || fail "agent $pid still alive after stop"
[ ! -e "$RDMATOOL_AGENT_DIR/gateway.0" ] && [ ! -e "$RDMATOOL_AGENT_DIR/agent.0.pid" ] || fail "stop left files: $(ls "$RDMATOOL_AGENT_DIR")"
[ -z "$(ls "$RDMATOOL_STATS_DIR")" ] || fail "stop left a stats segment: $(ls "$RDMATOOL_STATS_DIR")"
run agent stop
[ $rc -eq 3 ] && grep -q 'no agent runs' "$dir/err" || fail "stop without agent: $rc $(cat "$dir/err")"

# With the agent gone, remote requests say so instead of hanging.
run agent send 1/q "$dir/msg" --timeout=2000
[ $rc -eq 1 ] && grep -q 'no agent runs' "$dir/err" || fail "send without agent: $rc $(cat "$dir/err")"

# SIGKILL leaves a stale pid file and gateway: status sees no agent, the next start takes over.
run agent start
[ $rc -eq 0 ] || fail "restart exit $rc: $(cat "$dir/err")"
pid=$(cat "$RDMATOOL_AGENT_DIR/agent.0.pid")
# An agent alone, asked at once: its caps, and no pool (it has no links), never zeros (issue 46 defect 5).
run -j agent status
[ "$(jq '[.flow[] | .cap_bytes > 0] | all' "$dir/out")" = true ] || fail "a lone agent's caps: $(jq -c .flow "$dir/out")"
[ "$(jq .pool.links "$dir/out")" = false ] || fail "a lone agent's pool: $(jq -c .pool "$dir/out")"
run agent status
grep -q 'registered pool: none' "$dir/out" || fail "a lone agent's pool in text: $(cat "$dir/out")"
kill -9 "$pid"
wait_until gone "$pid" || fail "agent $pid survived SIGKILL"
[ -e "$RDMATOOL_AGENT_DIR/agent.0.pid" ] || fail "expected a stale pid file"
run agent status
[ $rc -eq 3 ] || fail "status after SIGKILL exit $rc"
run agent start
[ $rc -eq 0 ] || fail "start over a stale pid file: $rc $(cat "$dir/err")"
newpid=$(cat "$RDMATOOL_AGENT_DIR/agent.0.pid")
[ "$newpid" != "$pid" ] || fail "pid file not rewritten"
run agent stop
[ $rc -eq 0 ] || fail "stop after takeover: $rc"
rm -f "$RDMATOOL_STATS_DIR"/* # the SIGKILLed agent's segment: not ours to test here

# foreground ends cleanly on SIGINT and on SIGTERM.
for sig in INT TERM; do
	"$RDMATOOL" agent foreground 2>"$dir/fg.err" &
	fg=$!
	wait_until test -e "$RDMATOOL_AGENT_DIR/gateway.0" || fail "foreground never served"
	kill -$sig $fg
	set +e
	wait $fg
	frc=$?
	set -e
	[ $frc -eq 0 ] || fail "foreground exit $frc after SIG$sig: $(cat "$dir/fg.err")"
	grep -q 'stopping' "$dir/fg.err" || fail "no stop line in the log after SIG$sig"
	[ ! -e "$RDMATOOL_AGENT_DIR/gateway.0" ] || fail "SIG$sig left the gateway"
done

# Launched by Slurm: the node list and the rank come from its variables, and the log says so.
SLURM_JOB_NODELIST='localhost,n[2-3]' SLURM_NODEID=0 run agent start
[ $rc -eq 0 ] || fail "start under Slurm: $rc $(cat "$dir/err")"
run -j agent status
[ "$(jq .nodes "$dir/out")" = 3 ] && [ "$(jq -r '.peers[1].host' "$dir/out")" = n3 ] || fail "Slurm nodes: $(cat "$dir/out")"
grep -q '3 node(s) from SLURM_JOB_NODELIST; rank 0 from SLURM_NODEID' "$RDMATOOL_AGENT_DIR/agent.0.log" ||
	fail "the log does not say where the nodes came from: $(cat "$RDMATOOL_AGENT_DIR/agent.0.log")"
# Several agents on one machine: one per rank, side by side in one directory.
printf 'localhost\nlocalhost:7001\n' >"$dir/hostfile"
run agent start --hostfile="$dir/hostfile" --rank=1
[ $rc -eq 0 ] || fail "second agent with rank 1: $rc $(cat "$dir/err")"
run -j agent status --rank=1
[ $rc -eq 0 ] && [ "$(jq .rank "$dir/out")" = 1 ] || fail "status of rank 1: $rc $(cat "$dir/out")"
run agent stop --rank=1
[ $rc -eq 0 ] || fail "stop rank 1: $rc"
run agent stop
[ $rc -eq 0 ] || fail "stop rank 0: $rc"

# Bad input: exit 2 with the variable or option named.
RDMATOOL_AGENT_DEBUG=yes run agent status
[ $rc -eq 2 ] && grep -q RDMATOOL_AGENT_DEBUG "$dir/err" || fail "bad RDMATOOL_AGENT_DEBUG: $rc $(cat "$dir/err")"
RDMATOOL_AGENT_DIR=relative/dir run agent status
[ $rc -eq 2 ] && grep -q 'RDMATOOL_AGENT_DIR=.relative/dir. must be an absolute path' "$dir/err" ||
	fail "relative RDMATOOL_AGENT_DIR: $rc $(cat "$dir/err")"
run agent start --rank=2 --hosts=a,b
[ $rc -eq 2 ] && grep -q 'rank 2 (from --rank) but --hosts names 2 node' "$dir/err" || fail "rank beyond hosts: $rc $(cat "$dir/err")"
run agent start --hosts=240.0.0.1,240.0.0.2
[ $rc -eq 2 ] && grep -q 'none of the 2 hosts of --hosts is this machine.*give --rank' "$dir/err" ||
	fail "no local entry: $rc $(cat "$dir/err")"
SLURM_JOB_NODELIST='n[1-' run agent start
[ $rc -eq 2 ] && grep -q SLURM_JOB_NODELIST "$dir/err" || fail "bad SLURM_JOB_NODELIST: $rc $(cat "$dir/err")"
run agent start --hosts=a,,b
[ $rc -eq 2 ] && grep -q -- '--hosts' "$dir/err" || fail "bad hosts: $rc $(cat "$dir/err")"
run agent frobnicate
[ $rc -eq 2 ] && grep -q 'unknown action frobnicate' "$dir/err" || fail "unknown action: $rc $(cat "$dir/err")"
# Agents run detached: a sanitizer report (make asan / make tsan) lands in their log.
if grep -q 'Sanitizer' "$RDMATOOL_AGENT_DIR"/agent.*.log 2>/dev/null; then
	fail "sanitizer report in the agent log: $(grep -h -A20 'Sanitizer' "$RDMATOOL_AGENT_DIR"/agent.*.log | head -40)"
fi
echo "agent daemon: ok"
