#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# madstress with drops injected through ibsim's console: the dropped
# port's MADs count as timeouts (with retries), the others stay clean,
# the run ends on time and exits 1.
set -eu
. "$RDMATOOL_TOP/tests/integration/lib/ibsim.sh"
ibsim_enter_netns "$@"
ibsim_start "$RDMATOOL_TOP/tests/fabrics/two_switch_8hca.net"

lids=$(ibsim_lids)
victim=$(ibsim_hca_lid Hca5)
[ -n "$victim" ] || fail "no LID for Hca5"

# Drop everything through Hca5's port 1; ibsim reports each drop with status 110.
ibsim_console 'Error "Hca5"[1] 100'
wait_for 50 grep -q 'err_rate' <(echo 'Dump "Hca5"' >&7; sleep 0.2; cat "$IBSIM_DIR/ibsim.log") ||
	fail "ibsim did not take the Error command: $(tail -5 "$IBSIM_DIR/ibsim.log")"

out="$IBSIM_DIR/drop.json"
start=$(date +%s%N)
set +e
sim "$RDMATOOL" -j madstress -m get -t 2 -T 200 -r 2 -L "$lids" NodeInfo >"$out"
rc=$?
set -e
ms=$((($(date +%s%N) - start) / 1000000))
[ $rc -eq 1 ] || fail "exit $rc with drops, want 1"
# 2 s of run plus at most one timeout of drain, plus process start-up.
[ $ms -lt 4500 ] || fail "run took $ms ms, should end near 2 s"
python3 - "$out" "$victim" <<'PY' || fail "drop results"
import json, sys
d = json.load(open(sys.argv[1]))
victim = int(sys.argv[2])
t = d["total"]
for x in d["destinations"]:
    if x["lid"] == victim:
        assert x["timeouts"] > 0 and x["ok"] == 0, x
        # -r 2: two retransmissions each, except MADs cut short by the end of the run (-N 64)
        assert 2 * x["timeouts"] - 2 * 64 <= x["retries"] <= 2 * x["timeouts"], x
    else:
        assert x["timeouts"] == 0 and x["ok"] > 0 and x["ok"] == x["sent"], x
assert t["timeouts"] == sum(x["timeouts"] for x in d["destinations"]) > 0, t
assert t["sent"] == t["ok"] + t["timeouts"] + t["errors"], t
PY

# Clear the error: the same run is clean again.
ibsim_console 'Error "Hca5"[1] 0'
sim "$RDMATOOL" -j madstress -m get -c 100 -L "$victim" NodeInfo >"$out" || fail "after clearing the drop, exit $?"
echo ok
