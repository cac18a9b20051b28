#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The JSON documents match the shapes their man pages show: every key a page's JSON block names is in
# the output, and every key of the output's top level is in the block (nothing undocumented at the top).
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export RDMATOOL_STATS_DIR=$tmp

# check PAGE JSON-FILE [KEY...]: the keys ("key":) of the page's first .nf block that shows a '{'; the
# KEYs are documented for a case this run does not produce (a stale segment's "reason").
check() {
	python3 - "$RDMATOOL_TOP/man/$1" "$2" "${@:3}" <<'PY' || fail "$1 and the output of its -j differ"
import json, re, sys
page, out = sys.argv[1], sys.argv[2]
text = open(page, encoding="utf-8").read().replace("\\-", "-")
blocks = re.findall(r"^\.nf\n(.*?)^\.fi", text, re.M | re.S)
block = next(b for b in blocks if "{" in b)
documented = set(re.findall(r'"([A-Za-z_][A-Za-z0-9_.]*)"\s*:', block))
doc = json.loads(open(out).read().splitlines()[0])
seen = set()
def walk(v):
    if isinstance(v, dict):
        for k, x in v.items():
            seen.add(k)
            walk(x)
    elif isinstance(v, list):
        for x in v:
            walk(x)
walk(doc)
missing = sorted(documented - seen - set(sys.argv[3:]))
undocumented = sorted(set(doc) - documented)
if missing or undocumented:
    print(f"{page}: documented but not in the output: {missing}; top-level keys not documented: {undocumented}")
    sys.exit(1)
PY
}

"$RDMATOOL" -j devices >"$tmp/devices.json" 2>/dev/null
check rdmatool-devices.1 "$tmp/devices.json"

"$RDMATOOL" -j bench send_lat -n 20 >"$tmp/bench.json" 2>/dev/null
check rdmatool-bench.1 "$tmp/bench.json" copies_per_payload_byte

# Long enough to outlast a slow start (a sanitizer build on a busy machine); it is stopped below.
"$RDMATOOL" bench send_lat -D 600 >/dev/null 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$tmp"' EXIT
deadline=$((SECONDS + 120))
# The document compared is one that shows stripes (a bench opens and closes endpoints as it starts).
until "$RDMATOOL" -j cqstat "$pid" >"$tmp/cqstat.json" 2>/dev/null &&
	jq -e '.processes[0].cqs | map(.kind) | index("stripe") != null' "$tmp/cqstat.json" >/dev/null; do
	[ $SECONDS -lt $deadline ] || fail "bench published no stripes"
	sleep 0.1
done
kill -INT "$pid"
wait "$pid" || true
check rdmatool-cqstat.1 "$tmp/cqstat.json" reason error
echo ok
