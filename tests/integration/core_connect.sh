#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# core's two connect paths: the endpoint and peer-death unit tests run once with
# RDMATOOL_CONNECT=cm (QPs connected by the soft device's connection manager) and once with
# oob (the address blob); a bad value is an error naming the variable; bench -R (one process and
# against a server) and bench conn_rate (cm and oob in one run) work.
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
bin=$(cd "$(dirname "$RDMATOOL")" && pwd)/tests
dir=$(mktemp -d)
server=
trap '[ -n "$server" ] && kill -9 "$server" 2>/dev/null; rm -rf "$dir"' EXIT
. "$RDMATOOL_TOP/tests/integration/lib/bench_server.sh"
for t in test_core_endpoint test_core_peerdeath; do
	[ -x "$bin/$t" ] || fail "$bin/$t is not built; run 'make $BUILD/tests/$t'"
	for mode in cm oob; do
		out=$(RDMATOOL_CONNECT=$mode timeout -k 5 120 "$bin/$t" 2>&1) || fail "$t with RDMATOOL_CONNECT=$mode: $out"
	done
done
rc=0
out=$(RDMATOOL_CONNECT=tcp "$RDMATOOL" bench send_lat -n 10 2>&1) || rc=$?
[ "$rc" != 0 ] || fail "RDMATOOL_CONNECT=tcp: accepted: $out"
echo "$out" | grep -q "RDMATOOL_CONNECT='tcp' is invalid; use cm" || fail "RDMATOOL_CONNECT=tcp: $out"
# bench -R: the same test over QPs the CM connected, in one process and against a server.
"$RDMATOOL" -j bench send_lat -R -n 200 --lock=striped >"$dir/cm.json" 2>"$dir/cm.err" || fail "bench send_lat -R: $(cat "$dir/cm.err")"
jq -e '.results[0].t_typical > 0' "$dir/cm.json" >/dev/null || fail "bench send_lat -R: $(cat "$dir/cm.json")"
bench_server_start "$dir/server.err" "$RDMATOOL" bench --server=127.0.0.1:0
"$RDMATOOL" -j bench write_bw -R -n 200 --lock=striped --client="127.0.0.1:$port" >"$dir/remote.json" 2>"$dir/client.err" ||
	fail "bench write_bw -R --client: $(cat "$dir/client.err" "$dir/server.err")"
wait "$server" || fail "bench server: $(cat "$dir/server.err")"
server=
jq -e '.results[0].BW_average > 0' "$dir/remote.json" >/dev/null || fail "write_bw -R --client: $(cat "$dir/remote.json")"
# conn_rate: both setups connect every pair asked for, at a positive rate.
"$RDMATOOL" -j bench conn_rate -n 5 >"$dir/rate.json" || fail "bench conn_rate"
jq -e '[.results[] | select(.connections == 5 and .conn_per_sec > 0) | .connect] == ["cm", "oob"]' "$dir/rate.json" >/dev/null ||
	fail "bench conn_rate: $(cat "$dir/rate.json")"
echo "core connect ok"
