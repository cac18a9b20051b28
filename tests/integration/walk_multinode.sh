#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# walk --multinode=true: one process per client, updates over TCP, RC pairs
# and RDMA across processes over the soft device's wire.
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }

out=$(timeout 120 "$RDMATOOL" -j walk --clients=3 --duration=4 --multinode=true --seed=2 2>/dev/null) ||
	fail "multinode exit $?: $out"
echo "$out" | jq -e '.result == "pass" and .clients == 3 and .steps > 0' >/dev/null || fail "summary: $out"
# Cross-process pairs came up and carried RDMA.
for a in create_rc_qp_pair read write fetch_add comp_swap send recv create_ud_qp; do
	echo "$out" | jq -e --arg a "$a" '.actions[$a].ok > 0' >/dev/null || fail "$a never succeeded: $out"
done
echo "walk multinode ok"
