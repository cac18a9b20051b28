#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# walk: 5 clients on the soft device pass, every one of the 28 actions succeeds,
# the JSON has the documented shape, and every object is destroyed cleanly.
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }

out=$("$RDMATOOL" -j walk --clients=5 --duration=4 --seed=11 2>/dev/null) || fail "walk exit $?: $out"
echo "$out" | jq -e '.result == "pass" and .clients == 5 and .seed == 11 and .steps > 0 and .steps_per_s > 0' \
	>/dev/null || fail "summary: $out"
[ "$(echo "$out" | jq '.actions | length')" -eq 28 ] || fail "want 28 actions"
missing=$(echo "$out" | jq -r '[.actions | to_entries[] | select(.value.ok == 0) | .key] | join(" ")')
[ -z "$missing" ] || fail "actions that never succeeded: $missing"
echo "$out" | jq -e '.actions.read | has("issued") and has("ok") and has("errors")' >/dev/null || fail "action shape"
echo "$out" | jq -e '.completions.IBV_WC_SUCCESS > 0 and (.failures | length) == 0' >/dev/null || fail "completions"

text=$("$RDMATOOL" walk --clients=2 --duration=2 --seed=3 2>&1) || fail "text run: $text"
for want in "device ${RDMATOOL_TEST_DEVICE:-soft0}, seed 3, 2 clients" "weights:" "comp_swap=10" "redraws" "success" "steps/s" \
	"objects alive" "result: pass"; do
	echo "$text" | grep -q "$want" || fail "text output lacks '$want'"
done
# Without --seed the seed is drawn and printed.
"$RDMATOOL" walk --clients=1 --steps=50 2>&1 | grep -Eq "seed [0-9]+" || fail "seed not printed"
"$RDMATOOL" -j walk --clients=1 --steps=50 2>&1 >/dev/null | grep -Eq "seed [0-9]+" || fail "seed not on stderr with -j"
echo "walk basic ok"
