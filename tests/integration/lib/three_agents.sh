# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/integration/lib/three_agents.sh NAME [traffic]: the setting of the three-agent tests
# (agent_net, agent_chunks, agent_flow, agent_getmsg, agent_faults, ...): lib/agent_nodes.sh's
# ($T, $hosts, A, X, wait_for) for three nodes of one agent each, and
#   links_up R        node R's agent has both links up
#   start_agents      creates $T/aR (mode 700), starts the three agents in the caller's
#                     environment and waits for their links
# A test whose agents want different environments starts them itself.
. "$(dirname "${BASH_SOURCE[0]}")/agent_nodes.sh" "$1" 3 1 "${2:-}"
links_up() { [ "$(A "$1" -j agent status | jq '[.peers[] | select(.state == "up")] | length')" = 2 ]; }
start_agents() {
	for r in 0 1 2; do
		mkdir -p -m 700 "$T/a$r"
		A $r -q agent start --hosts="$hosts" --rank=$r ||
			fail "agent $r did not start: $(cat "$T/a$r/agent.$r.log" 2>/dev/null)"
	done
	for r in 0 1 2; do wait_for links_up $r || fail "links of rank $r not up: $(A $r agent status)"; done
}
