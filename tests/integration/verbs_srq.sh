#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# rdmatool exec: shared receive queues on soft0, with unmodified programs.  ibv_srq_pingpong
# (16 RC QPs on one SRQ, data checked with -c, polled and with events) and perftest's
# --use-srq over RC, UC and UD pass as two processes.  Before soft0 had SRQs, ibv_create_srq
# failed with EOPNOTSUPP and every one of these exited at once.
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
for p in ibv_srq_pingpong ib_send_bw ib_send_lat ss; do
	command -v "$p" >/dev/null || fail "$p is not installed; run 'make deps'"
done
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
. "$RDMATOOL_TOP/tests/integration/lib/verbs_pair.sh"

verbs_pair_ok srq_pingpong 60 ibv_srq_pingpong -g 0 -n 100 -c
grep -q "100 iters in" "$dir/srq_pingpong.client" || fail "srq_pingpong client: $(cat "$dir/srq_pingpong.client")"
verbs_pair_ok srq_pingpong_events 60 ibv_srq_pingpong -g 0 -n 50 -q 4 -s 65536 -e -c
grep -q "50 iters in" "$dir/srq_pingpong_events.server" ||
	fail "srq_pingpong -e server: $(cat "$dir/srq_pingpong_events.server")"

verbs_pair_ok send_bw_srq 120 ib_send_bw --use-srq -d soft0 -x 0 -F -n 200 -s 65536
grep -Eq '^ *65536 +200 +[0-9.]+ +[0-9.]+' "$dir/send_bw_srq.client" ||
	fail "ib_send_bw --use-srq: no result row: $(cat "$dir/send_bw_srq.client")"
verbs_pair_ok send_lat_srq 120 ib_send_lat --use-srq -d soft0 -x 0 -F -n 200
grep -Eq '^ *[0-9]+ +200 +[0-9.]+' "$dir/send_lat_srq.client" ||
	fail "ib_send_lat --use-srq: no result row: $(cat "$dir/send_lat_srq.client")"
for c in UC UD; do
	verbs_pair_ok "send_bw_srq_$c" 120 ib_send_bw --use-srq -c "$c" -d soft0 -x 0 -F -n 200 -s 2048
	grep -Eq '^ *2048 +200 +[0-9.]+ +[0-9.]+' "$dir/send_bw_srq_$c.client" ||
		fail "ib_send_bw --use-srq -c $c: no result row: $(cat "$dir/send_bw_srq_$c.client")"
done
echo "verbs srq ok"
