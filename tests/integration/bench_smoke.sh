#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Every bench test once with tiny sizes: the JSON has the documented shape and
# positive numbers (never their speed); two processes (--server/--client) too.
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
. "$RDMATOOL_TOP/tests/integration/lib/bench_server.sh"
command -v jq >/dev/null || fail "jq missing; run 'make deps'"

dir=$(mktemp -d /tmp/rdmatool-bench-smoke.XXXXXX)
export RDMATOOL_STATS_DIR=$dir
server=
cleanup() {
	[ -n "$server" ] && kill -9 "$server" 2>/dev/null
	wait 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT

check_transport() { # json test
	jq -e --arg t "$2" '.test == $t and (.results | length) == 2 and (.ratios | length) == 1' "$1" >/dev/null ||
		fail "$2: shape: $(cat "$1")"
	jq -e '[.results[] | .lock] == ["striped", "global"]' "$1" >/dev/null || fail "$2: locks: $(cat "$1")"
	jq -e '.results[] | .n_iterations > 0 and .MsgSize > 0 and .threads >= 1' "$1" >/dev/null ||
		fail "$2: counts: $(cat "$1")"
	case $2 in
	*_lat) jq -e '.results[] | .t_min > 0 and .t_typical >= .t_min and .t_avg > 0 and .percentile_99 >= .t_typical' \
		"$1" >/dev/null || fail "$2: latency figures: $(cat "$1")" ;;
	*) jq -e '.results[] | .BW_average > 0 and .BW_peak >= .BW_average and .MsgRate > 0' "$1" >/dev/null ||
		fail "$2: bandwidth figures: $(cat "$1")" ;;
	esac
	jq -e '.ratios[0] | to_entries | map(select(.key != "threads" and .key != "MsgSize")) | .[0].value > 0' \
		"$1" >/dev/null || fail "$2: ratio: $(cat "$1")"
}

for t in send_lat write_lat read_lat atomic_lat; do
	"$RDMATOOL" -j bench "$t" -s 8 -n 50 >"$dir/$t.json" || fail "$t failed"
	check_transport "$dir/$t.json" "$t"
done
for t in send_bw write_bw read_bw msg_rate; do
	"$RDMATOOL" -j bench "$t" -s 64 -n 200 >"$dir/$t.json" || fail "$t failed"
	check_transport "$dir/$t.json" "$t"
done
# Rendezvous sizes, two threads, and a duration instead of a count.
"$RDMATOOL" -j bench send_bw -s 65536 -n 20 --threads=2 >"$dir/rndv.json" || fail "send_bw 64 KiB failed"
check_transport "$dir/rndv.json" send_bw
# Exactly the asked count per thread: the untimed warm-up operations before it are not counted.
jq -e '[.results[] | .n_iterations] == [40, 40]' "$dir/rndv.json" >/dev/null ||
	fail "send_bw -n 20 --threads=2 counted other than 40 operations: $(cat "$dir/rndv.json")"
# However short the duration and slow the machine, each sender measures at least one operation.
"$RDMATOOL" -j bench msg_rate -D 0.000001 --threads=2 --lock=striped >"$dir/dur.json" || fail "msg_rate -D failed"
jq -e '(.results | length) == 1 and .results[0].n_iterations >= 2 and .results[0].threads == 2' "$dir/dur.json" \
	>/dev/null || fail "msg_rate -D: $(cat "$dir/dur.json")"

"$RDMATOOL" -j bench ring -n 2000 --threads=2 >"$dir/ring.json" || fail "ring failed"
jq -e '[.results[] | .impl] == ["lockfree", "mutex"] and (.results[] | .ops_per_s > 0) and .ratios[0].lockfree_over_mutex > 0' \
	"$dir/ring.json" >/dev/null || fail "ring: $(cat "$dir/ring.json")"

"$RDMATOOL" -j bench write_bw -s 4096 -n 20 --lock=striped --baseline >"$dir/base.json" || fail "--baseline failed"
jq -e '.results[0] | .memcpy_MiB_s > 0 and .tcp_MiB_s > 0 and .ratio_to_memcpy > 0 and .ratio_to_tcp > 0' \
	"$dir/base.json" >/dev/null || fail "baseline: $(cat "$dir/base.json")"

# Two processes: the server prints its port, the client runs two tests over one control connection each,
# each with its raw TCP baseline served by the same server process.
for t in send_lat write_bw; do
	bench_server_start "$dir/server.err" "$RDMATOOL" bench --server=127.0.0.1:0
	"$RDMATOOL" -j bench "$t" -s 16384 -n 30 --baseline --client="127.0.0.1:$port" >"$dir/remote.json" ||
		fail "$t --client --baseline failed"
	jq -e '.mode == "client"' "$dir/remote.json" >/dev/null || fail "mode: $(cat "$dir/remote.json")"
	check_transport "$dir/remote.json" "$t"
	case $t in
	*_lat) jq -e '.results[] | .tcp_t_typical > 0 and .ratio_to_tcp > 0' "$dir/remote.json" >/dev/null ;;
	*) jq -e '.results[] | .tcp_MiB_s > 0 and .ratio_to_tcp > 0 and .memcpy_MiB_s > 0' "$dir/remote.json" >/dev/null ;;
	esac || fail "$t two-process baseline: $(cat "$dir/remote.json")"
	wait "$server" || fail "server failed: $(cat "$dir/server.err")"
	server=
done

# The client counts both soft devices' CPU copies per payload byte: never under one, and on the TCP
# wire (socket in, socket out, into the target) at least three for 1 MiB WRITEs.  The shared wire's
# exact 1 is test_soft_shm's: here what crossed TCP before it was up counts too.
for shm in 1 0; do
	bench_server_start "$dir/server.err" env RDMATOOL_SOFT_SHM=$shm "$RDMATOOL" bench --server=127.0.0.1:0
	RDMATOOL_SOFT_SHM=$shm "$RDMATOOL" -j bench write_bw -s 1048576 -n 30 --lock=striped \
		--client="127.0.0.1:$port" >"$dir/copies.json" || fail "write_bw 1 MiB --client (SHM=$shm) failed"
	wait "$server" || fail "server failed: $(cat "$dir/server.err")"
	server=
	if [ $shm = 0 ]; then want='>= 2.9'; else want='>= 1'; fi
	# Through libibverbs (softv0) the soft device's counters are out of reach: no figure at all.
	jq -e "if .provider == \"soft\" then .copies_per_payload_byte $want else has(\"copies_per_payload_byte\") | not end" \
		"$dir/copies.json" >/dev/null ||
		fail "copies per payload byte with RDMATOOL_SOFT_SHM=$shm, want $want: $(cat "$dir/copies.json")"
done

# --rounds alternates the locks ABBA and reports one (median) ratio per thread count.
"$RDMATOOL" -j bench msg_rate -s 8 -n 50 --rounds=3 >"$dir/rounds.json" || fail "--rounds failed"
jq -e '[.results[] | .lock] == ["striped", "global", "global", "striped", "striped", "global"] and
	(.ratios | length) == 1 and .ratios[0].rounds == 3 and .ratios[0].striped_over_global > 0' \
	"$dir/rounds.json" >/dev/null || fail "rounds: $(cat "$dir/rounds.json")"

# Text output: perftest's column names with units, no line ending in spaces; JSON keys as perftest's.
"$RDMATOOL" bench write_lat -n 20 >"$dir/text" 2>/dev/null || fail "write_lat text"
grep -q 't_typical\[usec\]' "$dir/text" && grep -q '99.9% percentile\[usec\]' "$dir/text" ||
	fail "latency header lacks units: $(cat "$dir/text")"
"$RDMATOOL" bench write_bw -n 20 >>"$dir/text" 2>/dev/null || fail "write_bw text"
"$RDMATOOL" bench ring -n 2000 >>"$dir/text" 2>/dev/null || fail "ring text"
! grep -n ' $' "$dir/text" || fail "lines end in spaces"
jq -e '.results[0] | has("percentile_99.9") and has("percentile_99")' "$dir/write_lat.json" >/dev/null ||
	fail "no perftest key percentile_99.9: $(cat "$dir/write_lat.json")"

# Without --device it says which device it picked (the soft one here) in its report, as walk does:
# a line before the table, "device" and "provider" in JSON; nothing on stderr.
"$RDMATOOL" bench write_lat -n 5 2>"$dir/err" >"$dir/out" || fail "write_lat for the device line"
head -1 "$dir/out" | grep -qx "device ${RDMATOOL_TEST_DEVICE:-soft0} (${RDMATOOL_TEST_PROVIDER:-soft})" ||
	fail "no device line: $(cat "$dir/out")"
[ ! -s "$dir/err" ] || fail "bench printed on stderr: $(cat "$dir/err")"
jq -e --arg d "${RDMATOOL_TEST_DEVICE:-soft0}" '.device == $d' "$dir/write_lat.json" >/dev/null ||
	fail "no device in the JSON: $(cat "$dir/write_lat.json")"

# perftest's path options: -d, -i, -x, --sl, --mtu reach core's connect (no fixed port 1 / GID 0).
"$RDMATOOL" -j bench send_lat -n 20 -d "${RDMATOOL_TEST_DEVICE:-soft0}" -i 1 -x 1 --sl 1 --mtu 1024 \
	>"$dir/path.json" 2>"$dir/err" || fail "send_lat -i 1 -x 1 --sl 1 --mtu 1024: $(cat "$dir/err")"
check_transport "$dir/path.json" send_lat
path_error() { # want args...
	local want=$1 rc
	shift
	set +e
	"$RDMATOOL" bench send_lat -n 5 "$@" >/dev/null 2>"$dir/err"
	rc=$?
	set -e
	[ $rc -ne 0 ] && grep -q -- "$want" "$dir/err" || fail "bench $*: exit $rc: $(cat "$dir/err")"
}
path_error "has no port 2" -i 2
path_error "has no GID at index 99" -x 99
path_error "give 256, 512, 1024, 2048 or 4096" --mtu 1000
path_error "no device 'nodev0'" -d nodev0
# Two processes, each with its own path options.
bench_server_start "$dir/server.err" "$RDMATOOL" bench --server=127.0.0.1:0 -i 1 -x 0 --sl 2 --mtu 2048
"$RDMATOOL" -j bench write_lat -n 20 -i 1 -x 0 --sl 2 --mtu 2048 --client="127.0.0.1:$port" >"$dir/remote.json" ||
	fail "write_lat -i 1 -x 0 --sl 2 --mtu 2048 --client failed"
check_transport "$dir/remote.json" write_lat
wait "$server" || fail "server -i 1 -x 0 --sl 2 --mtu 2048 failed: $(cat "$dir/server.err")"
server=
"$RDMATOOL" -q bench write_lat -n 5 2>"$dir/err" >/dev/null || fail "write_lat -q"
[ ! -s "$dir/err" ] || fail "-q still printed: $(cat "$dir/err")"

# Usage errors exit 2 with a message.
set +e
"$RDMATOOL" bench msg_rate --rounds=0 >/dev/null 2>&1; [ $? -eq 2 ] || fail "--rounds=0: not 2"
"$RDMATOOL" bench nosuch >/dev/null 2>"$dir/err"; [ $? -eq 2 ] || fail "unknown test: not 2"
"$RDMATOOL" bench send_lat --threads=2 >/dev/null 2>&1; [ $? -eq 2 ] || fail "latency with threads: not 2"
"$RDMATOOL" bench msg_rate --lock=nope >/dev/null 2>&1; [ $? -eq 2 ] || fail "bad lock: not 2"
grep -q "unknown test nosuch" "$dir/err" || fail "unknown test message: $(cat "$dir/err")"

# The transport's environment variables: a bad value is named, exit 1.
for bad in RDMATOOL_TX_STRIPES=abc RDMATOOL_PROGRESS_THREAD=2 RDMATOOL_PROGRESS_CPU=99999 RDMATOOL_RING_SIZE=3 \
	RDMATOOL_MR_CACHE_MAX=-1 RDMATOOL_SOFT_FAULTS=bogus=1 RDMATOOL_SOFT_SPIN_US=x; do
	env "$bad" "$RDMATOOL" bench write_lat -n 5 >/dev/null 2>"$dir/err"
	rc=$?
	[ $rc -eq 1 ] || fail "$bad: exit $rc, want 1"
	grep -q "${bad%%=*}" "$dir/err" || fail "$bad: message does not name the variable: $(cat "$dir/err")"
done
set -e
# ... and valid values are accepted.
RDMATOOL_TX_STRIPES=2 RDMATOOL_PROGRESS_THREAD=1 "$RDMATOOL" -j bench write_lat -n 20 >"$dir/env.json" ||
	fail "bench with valid RDMATOOL_* variables"
jq -e '.results | length > 0' "$dir/env.json" >/dev/null || fail "env run results: $(cat "$dir/env.json")"

# The agent tests: a channel against a pipe, and two agent processes against core send_lat.
"$RDMATOOL" -q -j bench chan_rate -s 64 -n 20000 --baseline >"$dir/chan.json" || fail "chan_rate failed"
jq -e '.test == "chan_rate" and .channel_over_pipe > 0 and (.results[0] | .channel_msgs_per_s > 0 and .pipe_msgs_per_s > 0 and .futex_calls_per_msg >= 0)' \
	"$dir/chan.json" >/dev/null || fail "chan_rate: $(cat "$dir/chan.json")"
RDMATOOL_AGENT_KEY=$dir/key "$RDMATOOL" -q -j bench agent_lat -s 8 -n 50 --baseline >"$dir/alat.json" ||
	fail "agent_lat failed"
jq -e '.test == "agent_lat" and .deposited_median_us > 0 and .core_send_lat_typical_us > 0 and .ratio_to_core_send_lat > 0 and
	.deposited_p10_us > 0 and .deposited_p10_us <= .deposited_median_us and .deposited_median_us <= .deposited_p90_us and
	((has("client_beside_agent") | not) or (.trial_median_beside_agent0_us > 0 and .trial_median_beside_agent1_us > 0 and
	.client_beside_agent == (if .trial_median_beside_agent0_us < .trial_median_beside_agent1_us then 0 else 1 end)))' \
	"$dir/alat.json" >/dev/null || fail "agent_lat: $(cat "$dir/alat.json")"
echo "bench_smoke: ok"
