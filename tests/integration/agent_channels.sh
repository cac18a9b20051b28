#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# rdmatool agent chan/send/recv/poll from the shell, without an agent (same
# node): boundaries and content (sha256), order, exactly-once delivery with
# several producer and consumer processes, full/empty/timeouts, sizes, the
# "received" return mode, and another user kept out.
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v jq >/dev/null || fail "jq missing; run 'make deps'"

dir=$(mktemp -d /tmp/rdmatool-agent-chan.XXXXXX)
export RDMATOOL_AGENT_DIR=$dir/agent RDMATOOL_STATS=0
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT
A() { timeout 30 "$RDMATOOL" "$@"; }
run() {
	set +e
	timeout 30 "$RDMATOOL" "$@" >"$dir/out" 2>"$dir/err"
	rc=$?
	set -e
}

# The directory is made private on first use.
A agent chan create q
[ "$(stat -c %a "$RDMATOOL_AGENT_DIR")" = 700 ] || fail "agent dir mode $(stat -c %a "$RDMATOOL_AGENT_DIR")"
[ "$(stat -c %a "$RDMATOOL_AGENT_DIR/chan.q")" = 600 ] || fail "channel file mode"
run agent chan create q
[ $rc -eq 1 ] && grep -q 'already exists' "$dir/err" || fail "create twice: $rc $(cat "$dir/err")"
run agent chan create ../evil
[ $rc -eq 2 ] && grep -q 'name must be' "$dir/err" || fail "bad name: $rc $(cat "$dir/err")"
A agent chan create small --capacity=2 --max-msg=100 --bytes=4096
[ "$(A -j agent chan list | jq -c '.channels | sort')" = '["q","small"]' ] || fail "list: $(A -j agent chan list)"

# Binary content keeps its bytes and boundaries: from a file, from stdin, and empty.
head -c 100000 /dev/urandom >"$dir/big"
A agent send q "$dir/big"
head -c 777 /dev/urandom >"$dir/mid"
A agent send q - <"$dir/mid"
A agent send q </dev/null
[ "$(A -j agent poll q | jq -c '[.count, .bytes]')" = "[3,100777]" ] || fail "poll: $(A -j agent poll q)"
A -j agent recv q -n 3 >"$dir/lines"
[ "$(jq -r .len "$dir/lines" | tr '\n' ' ')" = "100000 777 0 " ] || fail "lengths: $(cat "$dir/lines")"
[ "$(jq -r .sha256 "$dir/lines" | head -1)" = "$(sha256sum <"$dir/big" | cut -d' ' -f1)" ] || fail "sha256 of big"
[ "$(jq -r .sha256 "$dir/lines" | sed -n 2p)" = "$(sha256sum <"$dir/mid" | cut -d' ' -f1)" ] || fail "sha256 of mid"
[ "$(jq -r .sha256 "$dir/lines" | sed -n 3p)" = "$(sha256sum </dev/null | cut -d' ' -f1)" ] || fail "sha256 of empty"

# One producer's order, and --out writes one file per message.
for i in $(seq 0 99); do echo "message $i"; done | while read -r line; do printf '%s' "$line" | A agent send q; done
mkdir "$dir/o"
A agent recv q -n 100 --out="$dir/o"
for i in 0 1 50 99; do
	[ "$(cat "$dir/o/$(printf %06d $i)")" = "message $i" ] || fail "out file $i: $(cat "$dir/o/$(printf %06d $i)")"
done
[ "$(ls "$dir/o" | wc -l)" = 100 ] || fail "out files: $(ls "$dir/o" | wc -l)"

# Several producer and consumer processes: every message exactly once.
for p in 1 2 3 4; do
	(for i in $(seq 1 60); do printf 'p%d-%d' "$p" "$i" | A agent send q --timeout=10000 || exit 1; done) &
	pids+=($!)
done
for c in 1 2 3; do
	mkdir "$dir/c$c"
	# Consumers drain until 8 s pass without a message: producers start a process per message, slow under TSan
	# and on a loaded machine (240 process starts can take longer than A's 30 s), so their limit is longer.
	timeout 120 "$RDMATOOL" agent recv q -n 0 --timeout=8000 --out="$dir/c$c" &
	pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || fail "a producer or consumer failed"; done
pids=()
total=$(find "$dir"/c1 "$dir"/c2 "$dir"/c3 -type f | wc -l)
[ "$total" = 240 ] || fail "consumers got $total of 240 messages"
find "$dir"/c1 "$dir"/c2 "$dir"/c3 -type f -exec cat {} \; -exec echo \; | sort >"$dir/all"
[ -z "$(uniq -d "$dir/all")" ] || fail "duplicates: $(uniq -d "$dir/all" | head -3)"
[ "$(sort -u "$dir/all" | wc -l)" = 240 ] || fail "distinct messages: $(sort -u "$dir/all" | wc -l)"

# Full, empty, timeouts and sizes.
printf a | A agent send small
printf b | A agent send small
run agent send small --timeout=0 </dev/null
[ $rc -eq 1 ] && grep -q 'full' "$dir/err" || fail "send to a full channel: $rc $(cat "$dir/err")"
run agent send small --timeout=100 </dev/null
[ $rc -eq 1 ] && grep -q 'timed out' "$dir/err" || fail "send timeout: $rc $(cat "$dir/err")"
[ "$(A -j agent poll small | jq -c '[.count, .full]')" = "[2,true]" ] || fail "poll full"
A agent recv small -n 2 >/dev/null
run agent recv small --timeout=100
[ $rc -eq 1 ] && grep -q '0 of 1 message' "$dir/err" || fail "recv timeout: $rc $(cat "$dir/err")"
head -c 101 /dev/zero >"$dir/101"
run agent send small "$dir/101"
[ $rc -eq 1 ] && grep -q 'larger than.*100 bytes' "$dir/err" || fail "oversize: $rc $(cat "$dir/err")"
run agent send nosuch </dev/null
[ $rc -eq 1 ] && grep -q 'no such channel' "$dir/err" || fail "missing channel: $rc $(cat "$dir/err")"
run agent send q --mode=sometimes </dev/null
[ $rc -eq 2 ] && grep -q -- '--mode=' "$dir/err" || fail "bad mode: $rc $(cat "$dir/err")"
run agent recv q --out="$dir/nonexistent"
[ $rc -eq 2 ] && grep -q 'not a directory' "$dir/err" || fail "bad --out: $rc $(cat "$dir/err")"
run agent send q --timeout=-5 </dev/null
[ $rc -eq 2 ] && grep -q -- '--timeout=-5' "$dir/err" || fail "bad --timeout: $rc $(cat "$dir/err")"

# "received" returns only once a receiver took the message; "deposited" as soon as it is in the channel.
printf r | A agent send q --mode=received --timeout=20000 &
sender=$!
pids+=($sender)
for _ in $(seq 500); do
	[ "$(A -j agent poll q | jq .count)" = 1 ] && break
	sleep 0.02
done
[ "$(A -j agent poll q | jq .count)" = 1 ] || fail "the message never arrived"
sleep 0.2
kill -0 $sender 2>/dev/null || fail "'received' returned before anyone took the message"
[ "$(A agent recv q)" = r ] || fail "wrong message"
wait $sender || fail "'received' sender failed after the message was taken"
pids=()
printf d | A agent send q --mode=deposited --timeout=1000 || fail "deposited send"
run agent send q --mode=received --timeout=200 </dev/null
[ $rc -eq 1 ] && grep -q 'nobody took the message' "$dir/err" || fail "received timeout: $rc $(cat "$dir/err")"
A agent recv q -n 2 >/dev/null

# Another user cannot attach: the directory is private.
if command -v setpriv >/dev/null; then
	bin=$dir/bin
	mkdir -m 755 "$bin"
	chmod 711 "$dir"
	cp "$RDMATOOL" "$bin/rdmatool"
	chmod 755 "$bin/rdmatool"
	set +e
	setpriv --reuid=nobody --regid=nogroup --clear-groups env RDMATOOL_AGENT_DIR="$RDMATOOL_AGENT_DIR" \
		"$bin/rdmatool" agent recv q --timeout=0 >"$dir/out" 2>"$dir/err"
	rc=$?
	set -e
	[ $rc -ne 0 ] || fail "another user read a channel"
	grep -q 'must be a directory owned by uid 65534\|Permission denied\|not a private channel' "$dir/err" ||
		fail "another user's error: $(cat "$dir/err")"
	chmod 700 "$dir"
else
	fail "setpriv missing (util-linux)"
fi

A agent chan destroy small
run agent chan destroy small
[ $rc -eq 1 ] && grep -q 'no such channel' "$dir/err" || fail "destroy twice: $rc $(cat "$dir/err")"
echo "agent channels: ok"
