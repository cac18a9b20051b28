#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# walk --seed: one client with --steps replays the same actions, parameters
# and results; another seed gives another walk.
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT

run() { "$RDMATOOL" -j walk --clients=1 --steps=1500 --seed="$1" --history=100000 --history-file="$dir/$2" 2>/dev/null; }
a=$(run 42 a | jq -c .actions) || fail "run a"
b=$(run 42 b | jq -c .actions) || fail "run b"
c=$(run 43 c | jq -c .actions) || fail "run c"
[ "$a" = "$b" ] || fail "same seed, different counts"
# Actions, parameters and results replay line for line; completions may be
# polled in another order within a step, so they are compared as a set.
# QP numbers and keys are the device's to choose (random on the soft device,
# as on a NIC), not the walk's, and work-request slots depend on when
# completions were polled: they are masked.
mask() { sed -E 's/\b(qp|rkey|lkey|wr)=[0-9a-fx]+/\1=_/g; s/qp [0-9]+ <-> [0-9]+/qp _ <-> _/g' "$1"; }
for f in a b c; do mask "$dir/$f" >"$dir/$f.m" && mv "$dir/$f.m" "$dir/$f"; done
grep -v ' cqe ' "$dir/a" >"$dir/a.act"; grep -v ' cqe ' "$dir/b" >"$dir/b.act"
cmp -s "$dir/a.act" "$dir/b.act" || { diff "$dir/a.act" "$dir/b.act" | head; fail "same seed, different actions"; }
grep ' cqe ' "$dir/a" | sort >"$dir/a.cqe"; grep ' cqe ' "$dir/b" | sort >"$dir/b.cqe"
cmp -s "$dir/a.cqe" "$dir/b.cqe" || { diff "$dir/a.cqe" "$dir/b.cqe" | head; fail "same seed, different completions"; }
[ "$(wc -l <"$dir/a.act")" -gt 1500 ] || fail "too few actions in the history"
cmp -s "$dir/a" "$dir/c" && fail "different seeds gave the same history"
echo "walk replay ok"
