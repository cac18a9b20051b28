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
. "$RDMATOOL_TOP/tests/integration/lib/exec_server.sh"

port=$(free_port)
exec_server_start "$dir/server" "$port" 300 qperf -lp "$port" ||
	fail "qperf -lp $port did not listen within 20 s: $(cat "$dir/server")"
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
