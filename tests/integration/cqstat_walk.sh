#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# cqstat watches a running walk: one row per client, counters rising between samples.
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }

dir=$(mktemp -d /tmp/rdmatool-cqstat-walk.XXXXXX)
export RDMATOOL_STATS_DIR=$dir
walk_pid=
cleanup() {
	[ -n "$walk_pid" ] && kill "$walk_pid" 2>/dev/null
	wait 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT

"$RDMATOOL" -q -j walk --clients=2 --duration=6 --seed=7 >"$dir/walk.json" &
walk_pid=$!
for _ in $(seq 100); do
	ls "$dir"/rdmatool-stats.* >/dev/null 2>&1 && break
	kill -0 "$walk_pid" 2>/dev/null || fail "walk exited before publishing"
	sleep 0.05
done
ls "$dir"/rdmatool-stats.* >/dev/null 2>&1 || fail "walk published no stats segment"
# Clients open their devices one after another: wait until both rows exist.
for _ in $(seq 100); do
	[ "$("$RDMATOOL" -j cqstat -c walk 2>/dev/null | jq '[.processes[].cqs[]] | length')" = 2 ] && break
	sleep 0.05
done

"$RDMATOOL" -j cqstat -c walk -i 1 -n 2 >"$dir/samples.json" || fail "cqstat exit $?"
python3 - "$dir/samples.json" <<'PY' || fail "cqstat samples of walk"
import json, sys
samples = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
assert len(samples) == 2, samples
rows = []
for s in samples:
    procs = [p for p in s["processes"] if p["comm"] == "walk"]
    assert len(procs) == 1, s
    cqs = sorted(procs[0]["cqs"], key=lambda c: c["name"])
    assert [c["name"] for c in cqs] == ["walk client 0", "walk client 1"], cqs
    rows.append(cqs)
for before, after in zip(rows[0], rows[1]):
    assert after["completed"] > before["completed"], (before, after)
    assert after["posted"] > before["posted"], (before, after)
    assert after["polls"] >= after["empty_polls"] > 0, after
PY
wait "$walk_pid" || fail "walk failed"
walk_pid=
ls "$dir"/rdmatool-stats.* >/dev/null 2>&1 && fail "walk left its stats segment behind"
echo ok
