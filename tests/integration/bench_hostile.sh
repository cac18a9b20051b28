#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# bench against a stalled client, bad options and refused operations (issue 15 items 11, 12, 13, 15):
# a half-sent control frame does not hold the server, which listens on the soft device's address only;
# a refused operation is reported by its completion status; bad numbers are usage errors naming the option.
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
. "$RDMATOOL_TOP/tests/integration/lib/bench_server.sh"

dir=$(mktemp -d /tmp/rdmatool-bench-hostile.XXXXXX)
export RDMATOOL_STATS_DIR=$dir
server=
cleanup() {
	exec 3>&- 2>/dev/null || true
	[ -n "$server" ] && kill -9 "$server" 2>/dev/null
	wait 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT

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
timeout 30 tail --pid="$server" -f /dev/null || fail "the server did not exit after serving the client"
wait "$server" || fail "server exit status: $(cat "$dir/server.err")"
server=
grep -q "dropped a client" "$dir/server.err" || fail "the stalled client was not reported: $(cat "$dir/server.err")"
exec 3>&-

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
