#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# rdmatool exec: qperf's RC tests with connections made by rdma_cm (-cm1), server and client
# each under exec: latency, bandwidth, RDMA READ, the "poll on memory" WRITE latency and the
# verified atomics (ver_rc_*: qperf checks the values).  Before rdma_bind_addr reserved its
# port, the server told its client port 0 and every RC test was REJECTED.  No speed is
# asserted; the server is stopped at the end.
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
for p in qperf ss; do
	command -v "$p" >/dev/null || fail "$p is not installed; run 'make deps'"
done
dir=$(mktemp -d)
server=
cleanup() {
	if [ -n "$server" ]; then
		kill "$server" 2>/dev/null || true
		wait "$server" 2>/dev/null || true
	fi
	rm -rf "$dir"
}
trap cleanup EXIT
. "$RDMATOOL_TOP/tests/integration/lib/verbs_pair.sh" # free_port, listening

port=$(free_port)
timeout -k 5 300 "$RDMATOOL" exec -- qperf -lp "$port" >"$dir/server" 2>&1 &
server=$!
for ((i = 0; i < 400; i++)); do
	listening "$port" && break
	kill -0 "$server" 2>/dev/null || fail "qperf server exited: $(cat "$dir/server")"
	sleep 0.05
done
listening "$port" || fail "qperf server does not listen on $port after 20 s"
tests="rc_lat rc_bw rc_rdma_read_bw rc_rdma_write_poll_lat ver_rc_compare_swap ver_rc_fetch_add"
rc=0
# shellcheck disable=SC2086
timeout -k 5 180 "$RDMATOOL" exec -- qperf -lp "$port" -cm1 -t 1 127.0.0.1 $tests >"$dir/client" 2>&1 || rc=$?
cat "$dir/client"
[ "$rc" = 0 ] || fail "qperf -cm1: exit $rc: $(cat "$dir/client") / server: $(cat "$dir/server")"
for t in $tests; do
	grep -q "^$t:" "$dir/client" || fail "qperf $t: no result"
done
[ "$(grep -Ec '^ +(latency|bw|msg_rate) += +[0-9.]+ ' "$dir/client")" = 6 ] || fail "qperf: not 6 results"
! grep -Eqi 'failed|error|rejected' "$dir/client" || fail "qperf reported an error"
echo "qperf ok"
