#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# madstress SET against ibsim: LinearForwardingTable block 0 on every
# switch, all answered, and the LFTs read back unchanged (SET writes back
# what it first read).
set -eu
. "$RDMATOOL_TOP/tests/integration/lib/ibsim.sh"
ibsim_enter_netns "$@"
ibsim_start "$RDMATOOL_TOP/tests/fabrics/two_switch_8hca.net"

switches=$(ibsim_switch_lids)
[ "$(echo "$switches" | tr , '\n' | wc -l)" -eq 2 ] || fail "want 2 switch LIDs, got '$switches'"

lft() {
	local s
	for s in $(echo "$switches" | tr , ' '); do
		echo "switch $s"
		sim smpdump "$s" 0x19 0 2>/dev/null || fail "smpdump LFT of $s"
	done
}
lft >"$IBSIM_DIR/before"
grep -q '^ff01 ' "$IBSIM_DIR/before" || fail "unexpected LFT: $(cat "$IBSIM_DIR/before")"

out="$IBSIM_DIR/set.json"
sim "$RDMATOOL" -j madstress -t 2 -N 64 -n 2 -L "$switches" LinearForwardingTable 0 >"$out" 2>"$IBSIM_DIR/set.err" ||
	fail "SET run exit $?"
# SET by default on a real fabric writes: say so when it was not asked for, not when it was.
grep -q "SET is the default" "$IBSIM_DIR/set.err" || fail "no notice of the default SET: $(cat "$IBSIM_DIR/set.err")"
sim "$RDMATOOL" -j madstress -m set -c 20 -L "$switches" LFT 0 >/dev/null 2>"$IBSIM_DIR/set.err" || fail "-m set LFT"
grep -q "SET is the default" "$IBSIM_DIR/set.err" && fail "notice printed although -m set was given"
python3 - "$out" <<'PY' || fail "SET LFT results"
import json, sys
d = json.load(open(sys.argv[1]))
t = d["total"]
assert d["params"]["method"] == "set" and d["params"]["attr"] == 0x19, d["params"]
assert t["sent"] > 500 and t["ok"] == t["sent"] and t["timeouts"] == 0 and t["errors"] == 0, t
assert sum(x["ok"] for x in d["destinations"]) == t["ok"]
assert all(x["ok"] > 0 for x in d["destinations"]), d["destinations"]
PY

lft >"$IBSIM_DIR/after"
diff -u "$IBSIM_DIR/before" "$IBSIM_DIR/after" || fail "SET changed a forwarding table"
ibsim_all_lids_assigned || fail "fabric lost LIDs after the SET run"

# SET of a read-only attribute: the snapshot works, the SETs are answered with an error status.
set +e
sim "$RDMATOOL" -j madstress -c 20 -L "$switches" NodeInfo >"$out" 2>/dev/null
rc=$?
set -e
[ $rc -eq 1 ] || fail "SET NodeInfo exit $rc, want 1"
python3 -c '
import json, sys
t = json.load(open(sys.argv[1]))["total"]
assert t["sent"] == 20 and t["errors"] == 20 and t["ok"] == 0, t
assert sum(t["errors_by_status"].values()) == 20, t
' "$out" || fail "SET NodeInfo errors by status"
echo ok
