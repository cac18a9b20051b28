#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# rdmatool exec: perftest, unmodified, on the soft device.  Each latency and bandwidth
# test runs as server and client (two processes, RoCE-style GID 0) and both exit 0 with a
# result line.  No speed is asserted here: `make bench` compares speeds.
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
for p in ib_send_lat ib_write_lat ib_read_lat ib_atomic_lat ib_write_bw ib_send_bw ib_read_bw ss; do
	command -v "$p" >/dev/null || fail "$p is not installed; run 'make deps'"
done
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
. "$RDMATOOL_TOP/tests/integration/lib/verbs_pair.sh"

for t in ib_send_lat ib_write_lat ib_read_lat ib_atomic_lat; do
	verbs_pair_ok "$t" 120 "$t" -d soft0 -x 0 -F -n 200
	# The result row: size, iterations, then the latencies.
	grep -Eq '^ *[0-9]+ +200 +[0-9.]+' "$dir/$t.client" || fail "$t: no result row: $(cat "$dir/$t.client")"
done
for t in ib_write_bw ib_send_bw ib_read_bw; do
	verbs_pair_ok "$t" 120 "$t" -d soft0 -x 0 -F -n 200 -s 65536
	grep -Eq '^ *65536 +200 +[0-9.]+ +[0-9.]+' "$dir/$t.client" || fail "$t: no result row: $(cat "$dir/$t.client")"
done
echo "perftest ok"
