#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Messages larger than a chunk (508 KiB by default) to another node, cut into
# chunks (RDMATOOL_AGENT_CHUNK_KB, different per sender) and put together at
# the target: three agents on one machine, two client processes on each of
# nodes 0 and 2 sending numbered messages of sizes from 10 B to 4 MiB (around
# the eager buffer, the chunk and the slot sizes), in modes deposited,
# buffered and immediately, to one channel on node 1.  Every message arrives
# exactly once, whole (its sha256), in order per sender; the count is printed.
# With the rma transport (the default) the chunks must have been read by the
# targets: no large frame sent, and every agent log names its staging slots;
# with RDMATOOL_AGENT_TRANSPORT_TYPE=p2p (agent_transport.sh) they went as
# large frames.
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
. "$(dirname "$0")/lib/three_agents.sh" chunks
start_agents
A 1 agent chan create q --bytes=$((64 << 20)) --max-msg=$((4 << 20))

# The messages: a header naming sender and number, then random bytes; sizes around every boundary.
python3 - "$T" <<'PY'
import hashlib, os, random, sys
t = sys.argv[1]
rng = random.Random(13)
sizes = [0, 1, 100, 2035, 2036, 2037, 8192, 8193, 65535, 65536, 65537, 65560, 200000, 520191, 520192,
         520193, 524288, 1 << 20, (1 << 20) + 7, 3000001, (4 << 20)]
with open(f"{t}/manifest", "w") as man:
    for node in (0, 2):
        for p in (1, 2):
            d = f"{t}/send-n{node}-p{p}"
            os.mkdir(d)
            for i in range(12):
                size = rng.choice(sizes)
                head = b"n%d-p%d-%03d\n" % (node, p, i)
                body = head + os.urandom(max(0, size - len(head)))
                with open(f"{d}/{i:03d}", "wb") as f:
                    f.write(body)
                man.write(f"{hashlib.sha256(body).hexdigest()} n{node}-p{p}-{i:03d}\n")
PY
total=$(wc -l <"$T/manifest")
pids=()
kb=(508 1 7 64)
k=0
for node in 0 2; do
	for p in 1 2; do
		chunk=${kb[k]}
		k=$((k + 1))
		(
			export RDMATOOL_AGENT_CHUNK_KB=$chunk
			modes=(deposited buffered immediately deposited)
			for f in "$T/send-n$node-p$p"/*; do
				i=$((10#$(basename "$f")))
				A $node agent send 1/q "$f" --mode="${modes[i % 4]}" --timeout=20000 ||
					exit 1
			done
		) &
		pids+=($!)
	done
done
mkdir "$T/got"
A 1 agent recv q -n "$total" --timeout=30000 --out="$T/got" >/dev/null ||
	fail "node 1 got fewer than $total messages: $(ls "$T/got" | wc -l)"
for p in "${pids[@]}"; do wait "$p" || fail "a sender failed"; done
run_rc=0
A 1 agent recv q --timeout=300 >/dev/null 2>&1 || run_rc=$?
[ $run_rc -ne 0 ] || fail "more than $total messages arrived"
python3 - "$T" "$total" <<'PY' || exit 1
import hashlib, os, sys
t, total = sys.argv[1], int(sys.argv[2])
want = dict(line.split()[::-1] for line in open(f"{t}/manifest"))
seen, last = {}, {}
for name in sorted(os.listdir(f"{t}/got")):  # files are numbered in arrival order
    body = open(f"{t}/got/{name}", "rb").read()
    tag = body.split(b"\n", 1)[0].decode(errors="replace")
    if tag not in want:
        sys.exit(f"FAIL: unknown message {name}: {body[:20]!r}")
    if tag in seen:
        sys.exit(f"FAIL: {tag} arrived twice")
    if hashlib.sha256(body).hexdigest() != want[tag]:
        sys.exit(f"FAIL: {tag} changed on the way ({len(body)} bytes)")
    sender, num = tag.rsplit("-", 1)
    if last.get(sender, -1) > int(num):
        sys.exit(f"FAIL: {tag} arrived after {sender}-{last[sender]:03d}")
    last[sender] = max(last.get(sender, -1), int(num))
    seen[tag] = True
if len(seen) != total:
    sys.exit(f"FAIL: {len(seen)} of {total} messages")
print(f"agent chunks: {total} messages of 10 B .. 4 MiB, each once, whole, in order per sender")
PY
large=0
for r in 0 1 2; do large=$((large + $(A $r -j agent status | jq '[.peers[].large_sent] | add'))); done
if [ "${RDMATOOL_AGENT_TRANSPORT_TYPE:-rma}" = rma ]; then
	[ "$large" = 0 ] || fail "rma: $large chunks went as large frames instead of being read"
	for r in 0 1 2; do
		grep -q "large messages: rma, [0-9]* staging slots" "$T/a$r/agent.$r.log" ||
			fail "rma: agent $r did not set up its registered slots: $(cat "$T/a$r/agent.$r.log")"
	done
else
	[ "$large" -gt 0 ] || fail "p2p: no large frame was sent"
fi
for r in 0 1 2; do A $r -q agent stop || fail "stop $r"; done
if grep -l 'Sanitizer' "$T"/a*/agent.*.log >/dev/null 2>&1; then
	fail "sanitizer report in an agent log: $(grep -h -A20 'Sanitizer' "$T"/a*/agent.*.log | head -40)"
fi
echo "agent chunks: ok"
