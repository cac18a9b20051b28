#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# bench against a stalled client, bad options and refused operations (issue 15 items 11, 12, 13, 15,
# issue 44 N8): a half-sent control frame, or silent connections queued before a real client, do not
# hold the server, which listens on the soft device's address only;
# a refused operation is reported by its completion status; bad numbers are usage errors naming the option.
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
. "$RDMATOOL_TOP/tests/integration/lib/bench_server.sh"

dir=$(mktemp -d /tmp/rdmatool-bench-hostile.XXXXXX)
export RDMATOOL_STATS_DIR=$dir
server=
silent=()
cleanup() {
	exec 3>&- 2>/dev/null || true
	for fd in "${silent[@]}"; do exec {fd}>&- 2>/dev/null || true; done
	[ -n "$server" ] && kill -9 "$server" 2>/dev/null
	wait 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT
# server_ended WHAT: the server exits by itself (within 30 s) and with status 0 after WHAT.
server_ended() {
	timeout 30 tail --pid="$server" -f /dev/null || fail "the server did not exit after $1"
	wait "$server" || fail "server exit status after $1: $(cat "$dir/server.err")"
	server=
}

# The server listens where its soft device does (127.0.0.7 here), not on every interface.
bench_server_start "$dir/server.err" env RDMATOOL_SOFT_ADDR=127.0.0.7:0 "$RDMATOOL" bench --server=0
grep -q "listening on 127.0.0.7:0 only" "$dir/server.err" || fail "no notice of the address: $(cat "$dir/server.err")"
if (exec 4<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
	fail "the server accepted a connection on 127.0.0.1: it listens on more than the soft device's address"
fi

# A stranger connects first and sends three bytes of a frame header, then nothing; it keeps the socket open.
exec 3<>"/dev/tcp/127.0.0.7/$port"
printf ROB >&3
timeout 90 "$RDMATOOL" -j bench write_lat -n 50 --lock=striped --client="127.0.0.7:$port" >"$dir/client.json" \
	2>"$dir/client.err" || fail "the real client was not served after a stalled one: $(cat "$dir/client.err")"
jq -e '.results[0].n_iterations == 50' "$dir/client.json" >/dev/null || fail "client result: $(cat "$dir/client.json")"
server_ended "serving the client"
grep -q "dropped a client" "$dir/server.err" || fail "the stalled client was not reported: $(cat "$dir/server.err")"
exec 3>&-

# N8: eight connections that never say a word, then one that sends half a header, all before the real
# client: the server serves the real client at once (before, each silent one held it for 5 s in turn, and
# the real client's own 30 s deadline ran out first) and drops the silent ones.
bench_server_start "$dir/server.err" env RDMATOOL_SOFT_ADDR=127.0.0.7:0 "$RDMATOOL" bench --server=0
for i in $(seq 9); do
	exec {fd}<>"/dev/tcp/127.0.0.7/$port"
	silent+=("$fd")
done
printf ROB1 >&"${silent[8]}"
timeout 120 "$RDMATOOL" -j bench write_lat -n 50 --lock=striped --client="127.0.0.7:$port" >"$dir/client.json" \
	2>"$dir/client.err" || fail "the real client was not served behind silent ones: $(cat "$dir/client.err")"
jq -e '.results[0].n_iterations == 50' "$dir/client.json" >/dev/null || fail "client result: $(cat "$dir/client.json")"
server_ended "serving the client"
[ "$(grep -c "dropped a client" "$dir/server.err")" -ge 9 ] || fail "silent clients not reported: $(cat "$dir/server.err")"
for fd in "${silent[@]}"; do exec {fd}>&-; done
silent=()

# A starved peer (a loaded host, a sanitizer build, a debugger): the server is stopped for 2 s in the
# middle of a write_lat run (one WRITE in flight: it sits in the stopped peer's socket, acknowledged by TCP).  The core transport's QPs wait for it (timeout 18, 1.07 s, 7 retries:
# ~8.6 s) and the run completes; before (timeout 14, 67 ms: ~0.5 s) it ended in RETRY_EXC.
bench_server_start "$dir/server.err" "$RDMATOOL" bench --server=0
"$RDMATOOL" bench write_lat -D 5 --lock=striped --client="127.0.0.1:$port" >"$dir/starved.out" 2>"$dir/starved.err" &
client=$!
for _ in $(seq 300); do # until the client's counters show completed WRITEs
	"$RDMATOOL" -j cqstat "$client" -i 0.1 --count=1 2>/dev/null |
		jq -e '[.processes[0].cqs[].completed] | add > 0' >/dev/null 2>&1 && break
	sleep 0.1
done
kill -STOP "$server"
sleep 2
kill -CONT "$server"
wait "$client" || fail "write_lat with a peer stopped for 2 s: exit $?: $(cat "$dir/starved.err")"
grep -q '^striped' "$dir/starved.out" || fail "write_lat beside a stopped peer: $(cat "$dir/starved.out")"
server_ended "the starved run"

# The same, made exact with the soft device's delay line: the server answers every request 0.7 s late.
# Within the core transport's budget (1.07 s a try); before, 0.7 s was past all of it (8 x 67 ms).
bench_server_start "$dir/server.err" env RDMATOOL_SOFT_FAULTS=delay_us=700000 "$RDMATOOL" bench --server=0
timeout 120 "$RDMATOOL" bench write_lat -n 3 --lock=striped --client="127.0.0.1:$port" >"$dir/late.out" \
	2>"$dir/late.err" || fail "write_lat with answers 0.7 s late: exit $?: $(cat "$dir/late.err")"
server_ended "the late run"

# A server nobody uses ends on SIGTERM, exit 0, and removes its stats segment.
bench_server_start "$dir/server.err" "$RDMATOOL" bench --server=0
kill -TERM "$server"
timeout 10 tail --pid="$server" -f /dev/null || fail "an idle server did not end on SIGTERM"
wait "$server" || fail "idle server after SIGTERM: exit $?: $(cat "$dir/server.err")"
[ ! -e "$RDMATOOL_STATS_DIR/rdmatool-stats.$server" ] || fail "the server left its stats segment"
server=

# A refused operation is reported by its completion status and opcode, not as a reset connection.
for t in write_lat send_lat send_bw atomic_lat; do
	set +e
	RDMATOOL_SOFT_FAULTS=error=1 timeout 60 "$RDMATOOL" bench "$t" -n 20 --lock=striped >/dev/null 2>"$dir/err"
	rc=$?
	set -e
	[ "$rc" -eq 1 ] || fail "$t with error=1: exit $rc, want 1: $(cat "$dir/err")"
	grep -q "completed with status 'remote operation error'" "$dir/err" || fail "$t: no completion status: $(cat "$dir/err")"
	grep -q "Connection reset" "$dir/err" && fail "$t: still says connection reset: $(cat "$dir/err")"
	case $t in
	write*) grep -q "RDMA WRITE completed" "$dir/err" ;;
	send*) grep -q "SEND completed" "$dir/err" ;;
	atomic*) grep -q "ATOMIC FETCH_ADD completed" "$dir/err" ;;
	esac || fail "$t: opcode not named: $(cat "$dir/err")"
done

# SIGINT in the middle of a sweep: the rows measured so far are printed, the JSON says so, exit 1, and the
# process's stats segment is gone.
"$RDMATOOL" bench write_bw -a -D 0.3 --lock=striped >"$dir/int.txt" 2>"$dir/int.err" &
pid=$!
for _ in $(seq 300); do grep -q '^striped' "$dir/int.txt" && break; sleep 0.1; done
grep -q '^striped' "$dir/int.txt" || { kill -9 $pid; fail "no row within 30 s: $(cat "$dir/int.err")"; }
kill -INT $pid
set +e
wait $pid
rc=$?
set -e
[ $rc -eq 130 ] || fail "interrupted bench: exit $rc, want 130: $(cat "$dir/int.err")"
grep -q "interrupted: the results above are partial" "$dir/int.err" || fail "no notice: $(cat "$dir/int.err")"
rows=$(grep -c '^striped' "$dir/int.txt")
[ "$rows" -ge 1 ] && [ "$rows" -lt 23 ] || fail "interrupted sweep printed $rows rows"
[ ! -e "/dev/shm/rdmatool-stats.$pid" ] && [ ! -e "$RDMATOOL_STATS_DIR/rdmatool-stats.$pid" ] ||
	fail "the interrupted bench left its stats segment"
"$RDMATOOL" -j bench write_bw -a -D 0.3 --lock=striped >"$dir/int.json" 2>/dev/null &
pid=$!
sleep 1
kill -INT $pid
wait $pid || true
jq -e '.interrupted == true and (.results | length) >= 1' "$dir/int.json" >/dev/null ||
	fail "interrupted JSON: $(cat "$dir/int.json")"

# Usage errors: exit 2, naming the option (popt alone names only the value when it is a separate word).
usage() { # expected-text args...
	local want=$1 rc
	shift
	set +e
	"$RDMATOOL" "$@" >/dev/null 2>"$dir/err"
	rc=$?
	set -e
	[ "$rc" -eq 2 ] || fail "'$*': exit $rc, want 2: $(cat "$dir/err")"
	grep -qF -- "$want" "$dir/err" || fail "'$*': message lacks '$want': $(cat "$dir/err")"
}
usage "--iters 0" bench -n 0 write_lat
usage "--iters -1" bench -n -1 write_lat
usage "--server=abc is not [ADDR:]PORT" bench --server=abc
usage "--client=host:99999 is not HOST[:PORT]" bench --client=host:99999 send_lat
usage "-s abc: invalid numeric value" bench -s abc send_lat
usage "-n abc: invalid numeric value" bench -n abc send_lat
usage "-D abc: invalid numeric value" bench -D abc send_lat
usage "-t abc: invalid numeric value" madstress -t abc -L 1 0x11
usage "-N abc: invalid numeric value" madstress -N abc -L 1 0x11
usage "-T abc: invalid numeric value" madstress -T abc -L 1 0x11
usage "-c 0: give a positive number" madstress -c 0 -L 1 0x11
echo "bench hostile: ok"
