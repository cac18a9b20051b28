#!/usr/bin/env bash
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
cmp -s "$dir/a" "$dir/b" || { diff "$dir/a" "$dir/b" | head; fail "same seed, different history"; }
[ "$(wc -l <"$dir/a")" -gt 1500 ] || fail "history file too short"
cmp -s "$dir/a" "$dir/c" && fail "different seeds gave the same history"
echo "walk replay ok"
