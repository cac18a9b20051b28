# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/integration/lib/two_agents.sh NAME: the setting of the two-node agent tests (agent_order,
# agent_linkdown, agent_getmsg_orphan, agent_hostile_chan, ...): lib/agent_nodes.sh's
# ($T, $hosts, A, X, wait_for) for two nodes of one agent each, and
#   links_up R              node R's agent has its link up
#   start_two [HOSTS]       creates $T/a0 and $T/a1 (mode 700), starts both agents (on HOSTS,
#                           default $hosts) in the caller's environment, waits for their link;
#                           A_ENV_R (R = 0 or 1), if set, is an environment assignment for agent R
. "$(dirname "${BASH_SOURCE[0]}")/agent_nodes.sh" "$1" 2 1
links_up() { [ "$(A "$1" -j agent status | jq -r '.peers[0].state')" = up ]; }
start_two() {
	local r env
	for r in 0 1; do
		mkdir -p -m 700 "$T/a$r"
		env=A_ENV_$r
		env ${!env:-} RDMATOOL_AGENT_DIR="$T/a$r" timeout "$A_TIMEOUT" "$RDMATOOL" -q agent start \
			--hosts="${1:-$hosts}" --rank=$r || fail "agent $r did not start: $(cat "$T/a$r/agent.$r.log" 2>/dev/null)"
	done
	for r in 0 1; do wait_for links_up $r || fail "the link of rank $r is not up: $(A $r agent status)"; done
}
