#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Multinode walk against failures of its own processes and strangers on its hub port (issue 15 items 9,
# 10, 15): nothing waits forever, a silent client is named and killed, clients stop when the hub dies,
# and bad paths and values are usage errors.
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
dir=$(mktemp -d /tmp/rdmatool-walk-hostile.XXXXXX)
export RDMATOOL_STATS_DIR=$dir/stats
mkdir "$dir/stats"
walkpid=
cleanup() {
	[ -n "$walkpid" ] && pkill -9 -P "$walkpid" 2>/dev/null
	[ -n "$walkpid" ] && kill -9 "$walkpid" 2>/dev/null
	wait 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT
children_of() { pgrep -P "$1" | tr '\n' ' '; }
wait_children() { # PID N: until PID has N children (the client processes)
	for _ in $(seq 200); do
		[ "$(pgrep -P "$1" | wc -l)" -ge "$2" ] && return 0
		sleep 0.05
	done
	fail "the walk never started its $2 clients"
}
wait_joined() { # PID N: until N clients of walk PID received the hub's peer table (they joined the run)
	local hub got
	for _ in $(seq 1200); do
		hub=$(ss -Hltnp 2>/dev/null | awk -v p="pid=$1," 'index($0, p) {sub(/.*:/, "", $4); print $4; exit}')
		if [ -n "$hub" ]; then
			got=$(ss -HtnpiO state established "( dport = :$hub )" 2>/dev/null |
				grep -c 'bytes_received:[1-9]') || true
			[ "$got" -ge "$2" ] && return 0
		fi
		sleep 0.05
	done
	fail "the $2 clients never joined the run"
}

# Usage errors come before any process starts.
set +e
"$RDMATOOL" walk --history-file=/nonexistent/x >/dev/null 2>"$dir/err"
rc=$?
set -e
[ $rc -eq 2 ] && grep -q -- "--history-file /nonexistent/x: No such file or directory" "$dir/err" ||
	fail "--history-file in a missing directory: exit $rc: $(cat "$dir/err")"
for bad in "--heartbeat=0" "--heartbeat=-1" "--heartbeat=x" "--clients=0" "--duration=0"; do
	set +e
	"$RDMATOOL" walk $bad >/dev/null 2>&1
	rc=$?
	set -e
	[ $rc -eq 2 ] || fail "walk $bad: exit $rc, want 2"
done

# Item 9: clients that cannot open their device (they all want one fixed wire port) end the run at once,
# with a message, instead of leaving the hub and the others waiting.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
start=$(date +%s)
set +e
RDMATOOL_SOFT_ADDR=127.0.0.1:$port timeout 60 "$RDMATOOL" walk --multinode=true --clients=3 --duration=3 \
	>"$dir/out" 2>"$dir/err"
rc=$?
set -e
[ $rc -eq 1 ] || fail "clients that cannot start: exit $rc, want 1: $(cat "$dir/err")"
grep -q "process ended before it joined the run" "$dir/err" || fail "no message: $(cat "$dir/err")"
[ $(($(date +%s) - start)) -lt 15 ] || fail "it took $(($(date +%s) - start)) s to give up"

# A stranger on the hub's port is dropped and the walk goes on.
"$RDMATOOL" walk --multinode=true --clients=2 --duration=3 >"$dir/out" 2>"$dir/err" &
walkpid=$!
hub=
for _ in $(seq 200); do
	hub=$(ss -Hltnp 2>/dev/null | awk -v p="pid=$walkpid," '$0 ~ p { split($4, a, ":"); print a[length(a)]; exit }')
	[ -n "$hub" ] && break
	sleep 0.02
done
[ -n "$hub" ] || fail "did not find the hub's port"
(exec 3<>"/dev/tcp/127.0.0.1/$hub" && printf 'ROB1junkjunkjunk' >&3 && sleep 3) 2>/dev/null &
timeout 60 tail --pid="$walkpid" -f /dev/null || fail "the walk hung with a stranger on its hub port"
wait "$walkpid" || fail "the walk failed with a stranger on its hub port: $(cat "$dir/err")"
walkpid=

# Item 10: a SIGSTOPped client is named, killed and the run ends near its duration.
start=$(date +%s)
"$RDMATOOL" walk --multinode=true --clients=3 --duration=5 --heartbeat=2 >"$dir/out" 2>"$dir/err" &
walkpid=$!
wait_children "$walkpid" 3
wait_joined "$walkpid" 3
victim=$(pgrep -P "$walkpid" | head -1)
kill -STOP "$victim"
timeout 60 tail --pid="$walkpid" -f /dev/null || fail "a stopped client hung the walk"
set +e
wait "$walkpid"
rc=$?
set -e
walkpid=
[ $rc -eq 1 ] || fail "stopped client: exit $rc, want 1"
grep -q "(pid $victim) was silent for 2 s" "$dir/err" || fail "the silent client was not named: $(cat "$dir/err")"
grep -q "silent for 2 s (stopped or hung)" "$dir/out" || fail "no FAILURE line: $(cat "$dir/out")"
[ $(($(date +%s) - start)) -lt 20 ] || fail "the run took $(($(date +%s) - start)) s for a 5 s walk"
kill -0 "$victim" 2>/dev/null && fail "the silent client is still alive"

# Item 10: when the hub dies, the clients stop at once instead of walking to --duration.
"$RDMATOOL" walk --multinode=true --clients=3 --duration=60 --heartbeat=2 >"$dir/out" 2>"$dir/err" &
walkpid=$!
wait_children "$walkpid" 3
wait_joined "$walkpid" 3
kids=$(children_of "$walkpid")
kill -9 "$walkpid"
wait "$walkpid" 2>/dev/null || true
walkpid=
for _ in $(seq 200); do
	alive=
	for k in $kids; do kill -0 "$k" 2>/dev/null && alive="$alive $k"; done
	[ -z "$alive" ] && break
	sleep 0.05
done
[ -z "$alive" ] || fail "clients$alive still walk 10 s after the hub died"
[ -z "$(ls "$dir/stats")" ] || fail "segments left behind: $(ls "$dir/stats")"
echo "walk hostile: ok"
