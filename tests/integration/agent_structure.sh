#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The agent's shape (issue 46): core/chan holds what clients and the agent
# both map, core/agent/link its links by role, and no files of core/agent or
# core/chan call each other in a loop (every call points down: peer table at
# the bottom, the progress pass at the top).  tests/file_calls.py finds the
# loops; this test also plants one and checks the checker catches it.
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
cd "$RDMATOOL_TOP"
command -v python3 >/dev/null || { echo "SKIP: python3 is needed to read the call graph"; exit 77; }

# The layout: the shared-memory objects out of core/agent, the links in core/agent/link by role.
for f in core/chan/channel.c core/chan/gateway.c core/chan/gateway_agent.c core/chan/gateway_client.c \
	core/chan/steal.c core/chan/flow.c core/chan/agent_dir.c core/chan/agent_key.c \
	core/agent/link/peer.c core/agent/link/tx.c core/agent/link/rx.c core/agent/link/origin.c \
	core/agent/link/target.c core/agent/link/connect.c core/agent/link/steal.c core/agent/link/link.c; do
	[ -f "$f" ] || fail "$f is missing: the agent's layout changed without this test"
done
old=$(ls core/agent/link_*.c core/agent/channel.c core/agent/gateway*.c core/agent/steal.c 2>/dev/null || true)
[ -z "$old" ] || fail "files left in core/agent that belong elsewhere: $old"
# core/chan is below the agent: it calls nothing of core/agent (agent.h and sibling.h are types).
if grep -n '#include "core/agent/' core/chan/*.c core/chan/*.h | grep -v 'core/agent/agent.h'; then
	fail "core/chan includes core/agent headers (above)"
fi

out=$(python3 tests/file_calls.py --order core/agent core/chan) || {
	echo "$out" >&2
	fail "files of core/agent or core/chan call each other in a loop (above)"
}
echo "$out"
# The peer table is the bottom of the links: it calls no other link file.
echo "$out" | grep -q '^  core/agent/link/peer.c -> core/agent/agent_log.c$' ||
	fail "core/agent/link/peer.c calls more than the log: $(echo "$out" | grep 'link/peer.c ->')"

# The checker must see a loop when there is one: plant a call from the peer table up to the
# progress pass in a copy of the tree.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/core"
cp -r core/agent core/chan "$tmp/core/"
printf '\nint planted_loop(struct agent_links *lk)\n{\n\treturn links_progress(lk);\n}\n' >>"$tmp/core/agent/link/peer.c"
if planted=$(python3 tests/file_calls.py --root "$tmp" core/agent core/chan); then
	echo "$planted" >&2
	fail "the checker found no loop with peer.c calling links_progress"
fi
echo "$planted" | grep -q 'LOOP.*core/agent/link/peer.c' || fail "the planted loop is not the one reported: $planted"
echo "$planted" | grep -q 'planted_loop() uses links_progress()' || fail "the report does not name the call: $planted"
echo "planted loop caught:"
echo "$planted"
