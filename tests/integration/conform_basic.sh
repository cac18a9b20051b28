#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# rdmatool conform: --list, --case, -j, TAP, JUnit, exit codes (0 all pass, 1 a failure, 2 usage), and
# the same cases through libibverbs under rdmatool exec.
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# --list: every case, grouped by verbs object, names unique
"$RDMATOOL" conform --list >"$dir/list" || fail "--list exit $?"
n=$(wc -l <"$dir/list")
[ "$n" -ge 40 ] || fail "--list shows $n cases: $(cat "$dir/list")"
for g in qp_state mr mw cq data rc limits; do
	grep -q "^$g\." "$dir/list" || fail "no $g.* case in --list"
done
[ "$(awk '{print $1}' "$dir/list" | sort | uniq -d)" = "" ] || fail "a case name appears twice"
"$RDMATOOL" -j conform --list | jq -e '.cases | length >= 40 and all(.name and .summary)' >/dev/null ||
	fail "-j --list"
[ "$("$RDMATOOL" conform --list --case='rc.*' | awk '{print $1}' | tr '\n' ' ')" = \
	"rc.psn rc.retry rc.rnr rc.replay rc.uc_resync rc.dead_peer " ] || fail "--list --case='rc.*'"

# usage errors: exit 2 and a message naming the problem
expect2() {
	local want=$1; shift
	set +e
	out=$("$RDMATOOL" conform "$@" 2>&1); rc=$?
	set -e
	[ $rc -eq 2 ] || fail "conform $* exit $rc, want 2: $out"
	echo "$out" | grep -q -- "$want" || fail "conform $*: message lacks '$want': $out"
}
expect2 "matches no case" --case='nosuch.*'
expect2 "--format 'xml'" --format=xml
expect2 "-j and --format=tap" -j --format=tap
expect2 "--rounds 0" --rounds=0
expect2 "--seed ' 3'" --seed=' 3'
expect2 "--ib-dev nope0: no such device" -d nope0
expect2 "--ib-port 9" --ib-port=9
expect2 "unexpected argument" data.basic

# every case on the soft device: all pass (or skip naming why), exit 0, as one JSON document
"$RDMATOOL" -j conform >"$dir/all.json" || fail "conform on soft0 exit $?: $(cat "$dir/all.json")"
jq -e '.failed == 0 and (.cases | length) == .passed + .skipped and .passed >= 40 and
	all(.cases[]; .result != "skip" or (.why | length > 0))' "$dir/all.json" >/dev/null ||
	fail "conform on soft0: $(cat "$dir/all.json")"

# two globs, text: one line per case and the summary
"$RDMATOOL" conform --case='mr.keys,rc.psn' --rounds=3 --seed=9 >"$dir/two" || fail "two cases"
grep -q '^PASS mr.keys ' "$dir/two" && grep -q '^PASS rc.psn ' "$dir/two" || fail "two cases: $(cat "$dir/two")"
grep -q '^conform: 2 passed, 0 failed, 0 skipped' "$dir/two" || fail "summary: $(cat "$dir/two")"

# TAP: the plan, one line per case
"$RDMATOOL" conform --case='cq.*' --format=tap >"$dir/tap" || fail "tap exit $?"
head -2 "$dir/tap" | tr '\n' ' ' | grep -q '^TAP version 13 1\.\.6 $' || fail "TAP plan: $(cat "$dir/tap")"
[ "$(grep -c '^ok [0-9]* - cq\.' "$dir/tap")" = 6 ] || fail "TAP lines: $(cat "$dir/tap")"

# JUnit: well-formed XML with one testcase per case
"$RDMATOOL" conform --case='limits.*' --format=junit >"$dir/junit.xml" || fail "junit exit $?"
python3 - "$dir/junit.xml" <<'PY' || fail "JUnit: $(cat "$dir/junit.xml")"
import sys, xml.etree.ElementTree as ET
s = ET.parse(sys.argv[1]).getroot().find("testsuite")
cases = s.findall("testcase")
assert int(s.get("tests")) == len(cases) == 7 and s.get("failures") == "0", s.attrib
assert all(c.get("classname") == "conform.limits" for c in cases)
PY

# a device that breaks a rule: exit 1, the case named, TAP "not ok" with the reason, JUnit <failure>.
# RDMATOOL_SOFT_FAULTS corrupts payloads: data.basic compares every byte.
set +e
RDMATOOL_SOFT_FAULTS="corrupt=1,seed=3" "$RDMATOOL" conform --case=data.basic --format=tap >"$dir/bad" 2>&1
rc=$?
set -e
[ $rc -eq 1 ] || fail "a corrupting device: exit $rc, want 1: $(cat "$dir/bad")"
grep -q '^not ok 1 - data.basic' "$dir/bad" || fail "no 'not ok': $(cat "$dir/bad")"
grep -q "^  message: '.*" "$dir/bad" || fail "no failure message: $(cat "$dir/bad")"
set +e
RDMATOOL_SOFT_FAULTS="corrupt=1,seed=3" "$RDMATOOL" conform --case=data.basic --format=junit >"$dir/bad.xml" 2>/dev/null
set -e
grep -q '<failure message="' "$dir/bad.xml" || fail "no JUnit failure: $(cat "$dir/bad.xml")"

# the exec path: the soft device seen through libibverbs (softv0)
"$RDMATOOL" exec -- "$RDMATOOL" -j conform -d softv0 --case='data.*,qp_state.*,mw.*' >"$dir/exec.json" ||
	fail "conform through exec: $(cat "$dir/exec.json")"
jq -e '.device == "softv0" and .failed == 0 and .passed >= 15' "$dir/exec.json" >/dev/null ||
	fail "through exec: $(cat "$dir/exec.json")"
echo "conform basic ok"
