#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The transports of large messages: an invalid RDMATOOL_AGENT_TRANSPORT_TYPE
# or RDMATOOL_AGENT_HUGEPAGES stops the agent with a message naming the
# variable; then agent_chunks.sh's traffic (sizes around every boundary, four
# chunk sizes, three modes) with every agent on p2p, the transport that is not
# the default (agent_chunks.sh itself runs rma), and its buffers on hugepages
# if the system has them: each message once, whole, in order, sent as large
# frames.
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
. "$(dirname "$0")/lib/three_agents.sh" transport
for bad in "RDMATOOL_AGENT_TRANSPORT_TYPE=dma" "RDMATOOL_AGENT_TRANSPORT_TYPE=RMA" "RDMATOOL_AGENT_HUGEPAGES=yes"; do
	mkdir -m 700 "$T/bad"
	rc=0
	env "$bad" RDMATOOL_AGENT_DIR="$T/bad" timeout 20 "$RDMATOOL" -q agent foreground --hosts="$hosts" \
		--rank=0 >"$T/out" 2>&1 || rc=$?
	[ "$rc" != 0 ] || fail "$bad: the agent started"
	grep -q "${bad%%=*}" "$T/out" || fail "$bad: the message does not name the variable: $(cat "$T/out")"
	rm -rf "$T/bad"
done
RDMATOOL_AGENT_TRANSPORT_TYPE=p2p RDMATOOL_AGENT_HUGEPAGES=1 "$(dirname "$0")/agent_chunks.sh"
