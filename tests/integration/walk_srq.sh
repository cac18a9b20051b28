#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# walk's SRQ actions: create_srq, destroy_srq (refused with EBUSY while a QP
# uses the SRQ, as the model predicts), QPs created on an SRQ and
# post_srq_recv run, and walk --verify judges the SRQ receives (status,
# opcode, byte_len, the consuming QP, the message) with no false alarm over
# several seeds, on soft0 and through libibverbs (rdmatool exec, softv0).
# Steps, not seconds, and weights that make the SRQ actions frequent.
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }

srq_weights=(--weight=create_srq=5 --weight=destroy_srq=5 --weight=post_srq_recv=30)
check() { # $1: what, $2: the JSON
	echo "$2" | jq -e '.result == "pass" and (.failures | length) == 0' >/dev/null || fail "$1: $2"
	echo "$2" | jq -e '.actions.create_srq.ok > 0 and .actions.destroy_srq.ok > 0 and
		.actions.post_srq_recv.issued > 0 and .actions.post_srq_recv.ok > 0' >/dev/null ||
		fail "$1: an SRQ action never ran: $(echo "$2" | jq -c '.actions | {create_srq, destroy_srq, post_srq_recv}')"
	echo "$2" | jq -e '.verify.srq_receives_checked > 0 and .verify.srq_destroy_busy > 0' >/dev/null ||
		fail "$1: no SRQ receive judged or no busy destroy refused: $(echo "$2" | jq -c .verify)"
}

for seed in 1 2 3; do
	out=$("$RDMATOOL" -j walk --clients=3 --steps=3000 --verify --seed=$seed "${srq_weights[@]}" 2>/dev/null) ||
		fail "soft0 seed $seed: $out"
	check "soft0 seed $seed" "$out"
done

# In a sanitizer build the preload library needs its runtime first in LD_PRELOAD (lib/sanitizer.sh).
. "$RDMATOOL_TOP/tests/integration/lib/sanitizer.sh"
runtime=$(sanitizer_runtime "$(dirname "$RDMATOOL")/librdmatool-verbs.so")
out=$(if [ -n "$runtime" ]; then
	export LD_PRELOAD="$runtime${LD_PRELOAD:+:$LD_PRELOAD}" ASAN_OPTIONS="detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
fi
"$RDMATOOL" exec -- "$RDMATOOL" -j walk -d softv0 --clients=2 --steps=2000 --verify --seed=4 \
	"${srq_weights[@]}" 2>/dev/null) || fail "exec softv0: $out"
check "exec softv0" "$out"

# The action names come from the table: --weight completes them.
"$RDMATOOL" __complete walk -w '' | grep -qx 'post_srq_recv=' || fail "completion lacks post_srq_recv"
echo "walk srq ok"
