#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# madstress GET against an ibsim fabric: NodeInfo to every LID, directed
# route, -v decoding checked against smpquery, and the ibsim-only refusals.
set -eu
. "$RDMATOOL_TOP/tests/integration/lib/ibsim.sh"
ibsim_enter_netns "$@"
ibsim_start "$RDMATOOL_TOP/tests/fabrics/two_switch_8hca.net"

lids=$(ibsim_lids)
[ "$(echo "$lids" | tr , '\n' | wc -l)" -eq 10 ] || fail "want 10 LIDs, got '$lids'"
out="$IBSIM_DIR/get.json"

# GET NodeInfo to every LID: all answered, per-destination counts add up.
sim "$RDMATOOL" -j madstress -m get -t 2 -N 64 -n 2 -L "$lids" NodeInfo >"$out" || fail "GET run exit $?"
python3 - "$out" "$lids" <<'PY' || fail "GET NodeInfo results"
import json, sys
d = json.load(open(sys.argv[1]))
lids = [int(x) for x in sys.argv[2].split(",")]
t = d["total"]
assert t["sent"] > 1000 and t["ok"] == t["sent"], t
assert t["timeouts"] == 0 and t["errors"] == 0, t
assert [x["lid"] for x in d["destinations"]] == lids, d["destinations"]
for k in ("sent", "ok", "timeouts", "errors"):
    assert sum(x[k] for x in d["destinations"]) == t[k], k
    assert sum(w[k] for w in d["workers"]) == t[k], k
for x in d["destinations"]:
    assert x["ok"] > 0 and x["sent"] == x["ok"], x
    lat = x["lat_us"]
    assert 0 < lat["min"] <= lat["p50"] <= lat["p99"] <= lat["max"], lat
assert t["mads_per_s"] > 0 and 0 < t["cpu_pct"] < 400, t
assert d["params"]["method"] == "get" and d["params"]["attr"] == 0x11, d["params"]
PY

# While it runs, cqstat sees one row per worker with rising counters.
export RDMATOOL_STATS_DIR="$IBSIM_DIR/stats"
mkdir -p "$RDMATOOL_STATS_DIR"
sim "$RDMATOOL" -q madstress -m get -t 3 -N 16 -n 2 -L "$lids" NodeInfo >/dev/null &
bg=$!
for _ in $(seq 100); do
	ls "$RDMATOOL_STATS_DIR"/rdmatool-stats.* >/dev/null 2>&1 && break
	sleep 0.05
done
"$RDMATOOL" -j cqstat -c madstress -i 0.5 -n 2 >"$IBSIM_DIR/cqstat.json" || fail "cqstat on madstress"
wait "$bg" || fail "background madstress run"
python3 - "$IBSIM_DIR/cqstat.json" <<'PY' || fail "cqstat rows of madstress"
import json, sys
s = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
rows = [[c for p in x["processes"] if p["comm"] == "madstress" for c in p["cqs"]] for x in s]
assert len(rows) == 2 and all(len(r) == 1 for r in rows), rows
a, b = rows[0][0], rows[1][0]
assert a["name"] == "mad worker 0", a
assert b["posted"] > a["posted"] > 0 and b["completed"] > a["completed"], (a, b)
assert b["errors"] == 0, b
PY
unset RDMATOOL_STATS_DIR

# -v decodes NodeInfo: the GUIDs must match what smpquery reads.
lid=$(echo "$lids" | cut -d, -f5)
sim "$RDMATOOL" -j madstress -m get -c 20 -v -L "$lid" 0x11 >"$out" || fail "decode run"
want=$(sim smpquery nodeinfo "$lid" 2>/dev/null | awk -F. '/^Guid:/ {print $NF}')
got=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["destinations"][0]["decoded"]["Guid"])' "$out")
[ "$(printf '%x' "$want")" = "$(printf '%x' "$got")" ] || fail "decoded Guid $got, smpquery says $want"
# In text, -v reads as smpquery does: libibmad's names, layout and renderings, field for field.
sim "$RDMATOOL" madstress -m get -c 20 -v -L "$lid" NodeInfo >"$out.txt" || fail "decode text run"
sim smpquery nodeinfo "$lid" 2>/dev/null | grep -v '^#' >"$out.smpquery"
for field in BaseVers NodeType NumPorts SystemGuid Guid PortGuid DevId VendorId; do
	grep -qxF "$(grep "^$field:" "$out.smpquery")" <(sed 's/^ *//' "$out.txt") ||
		fail "-v $field: '$(grep "$field:" "$out.txt")', smpquery: '$(grep "^$field:" "$out.smpquery")'"
done

# Directed route 0,1 leaves Hca1 through port 1 and reaches Switch1 (NodeType 2).
sim "$RDMATOOL" -j madstress -m get -c 200 -v -D 0,1 NodeInfo >"$out" || fail "DR GET exit $?"
python3 - "$out" <<'PY' || fail "DR GET results"
import json, sys
d = json.load(open(sys.argv[1]))
t = d["total"]
assert t["sent"] == 200 and t["ok"] == 200, t
x = d["destinations"][0]
assert x["dr_path"] == "0,1" and x["decoded"]["NodeType"] == 2, x
assert d["params"]["routing"] == "directed"
PY
# Two hops: Switch1 port 7 leads to Switch2.
sim "$RDMATOOL" -j madstress -m get -c 10 -v -D 0,1,7 NodeInfo >"$out" || fail "2-hop DR GET"
python3 -c 'import json,sys; x=json.load(open(sys.argv[1]))["destinations"][0]["decoded"]; assert x["NodeType"]==2 and x["Guid"]=="0x200001", x' "$out" ||
	fail "2-hop DR reached the wrong node"

# Human output names the totals.
sim "$RDMATOOL" madstress -m get -c 50 -L "$lids" 0x11 | grep -q '^total  *50  *50 ' || fail "text output"

# Refusals that need a umad device: unknown CA (usage), several workers under umad2sim (usage).
set +e
msg=$(sim "$RDMATOOL" madstress -C nosuchca -m get -c 1 -L 1 0x11 2>&1); rc=$?
[ $rc -eq 2 ] || fail "unknown CA exit $rc: $msg"
echo "$msg" | grep -q "nosuchca: no such CA" || fail "unknown CA message: $msg"
msg=$(sim "$RDMATOOL" madstress -p 2 -m get -c 1 -L 1 0x11 2>&1); rc=$?
[ $rc -eq 2 ] || fail "-p 2 under ibsim exit $rc: $msg"
echo "$msg" | grep -q "use -p 1 under ibsim" || fail "-p 2 message: $msg"
# A LID nobody has: ibsim answers at once with status 110, a timeout.
msg=$(sim "$RDMATOOL" -j madstress -m get -c 5 -L 200 0x11 2>/dev/null); rc=$?
set -e
[ $rc -eq 1 ] || fail "unassigned LID exit $rc"
echo "$msg" | python3 -c 'import json,sys; t=json.load(sys.stdin)["total"]; assert t["timeouts"]==5 and t["ok"]==0, t' ||
	fail "unassigned LID counts: $msg"

# From a switch's management port 0, where smpquery works too (umad2sim attaches to SIM_HOST's node).
SIM_HOST=Switch1 sim smpquery -D nodeinfo 0 | grep -q 'NodeType:\.*Switch' || fail "smpquery from Switch1"
SIM_HOST=Switch1 sim "$RDMATOOL" -j madstress -m get -c 40 -L "$lids" NodeInfo >"$out" 2>"$IBSIM_DIR/sw.err" ||
	fail "madstress from a switch's port 0: $(cat "$IBSIM_DIR/sw.err")"
python3 - "$out" <<'PY' || fail "madstress from a switch: $(head -c 300 "$out")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["params"]["port"] == 0, d["params"]
assert d["total"]["ok"] == d["total"]["sent"] == 40, d["total"]
PY

# smpquery's names and aliases for the attribute, in any case.
for a in NI:17 ni:17 nodeinfo:17 PI:21 SI:18 ND:16 GI:20; do
	sim "$RDMATOOL" -j madstress -m get -c 10 -L "$lid" "${a%%:*}" >"$out" 2>/dev/null || true
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["params"]["attr"]==int(sys.argv[2]), d["params"]' \
		"$out" "${a##*:}" || fail "attribute alias ${a%%:*}: $(head -c 300 "$out")"
done
echo ok
