#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Every GID of a soft port is reachable from another process, as on a RoCE NIC (issue 42 item 6):
# perftest with -x 1 (GID index 1 on both sides, so each addresses the other's GID[1]) runs
# between two processes under rdmatool exec.  Before, the soft wire treated another process's
# GID[1] as unreachable and ib_write_bw -x 1 ended in RETRY_EXC (status 12).
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
for p in ib_write_bw ib_send_lat ib_read_lat ss; do
	command -v "$p" >/dev/null || fail "$p is not installed; run 'make deps'"
done
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
. "$RDMATOOL_TOP/tests/integration/lib/verbs_pair.sh"

verbs_pair_ok ib_write_bw 120 ib_write_bw -d soft0 -x 1 -F -n 200 -s 65536
grep -Eq '^ *65536 +200 +[0-9.]+ +[0-9.]+' "$dir/ib_write_bw.client" ||
	fail "ib_write_bw -x 1: no result row: $(cat "$dir/ib_write_bw.client")"
for t in ib_send_lat ib_read_lat; do
	verbs_pair_ok "$t" 120 "$t" -d soft0 -x 1 -F -n 200
	grep -Eq '^ *[0-9]+ +200 +[0-9.]+' "$dir/$t.client" || fail "$t -x 1: no result row: $(cat "$dir/$t.client")"
done
echo "perftest -x 1 ok"
