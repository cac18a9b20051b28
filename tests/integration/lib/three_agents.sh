# tests/integration/lib/three_agents.sh NAME [traffic]: the setting of the three-agent tests
# (agent_net, agent_chunks, agent_flow, agent_getmsg, agent_faults).  Sourced after `set -eu` and
# fail(); makes $T (/tmp/rdmatool-agent-NAME.*, removed with every agent killed on exit), picks
# three free ports ($hosts), and defines
#   A R ARGS...       rdmatool ARGS under node R's agent directory $T/aR (A_TIMEOUT s, default 60)
#   X R CMD ARGS...   tests/tools/agent_traffic CMD R ARGS under node R's directory (90 s at most;
#                     with "traffic", the tool must have been built)
#   links_up R        node R's agent has both links up
#   wait_for CMD...   retries CMD for 10 s
# The caller creates $T/aR (mode 700) and starts the agents: each test wants its own environment.
command -v jq >/dev/null || fail "jq missing; run 'make deps'"
command -v python3 >/dev/null || fail "python3 missing"
TRAFFIC=$BUILD/tests/tools/agent_traffic
if [ "${2:-}" = traffic ]; then
	[ -x "$TRAFFIC" ] || fail "$TRAFFIC missing; run 'make check'"
fi
A_TIMEOUT=${A_TIMEOUT:-60}

T=$(mktemp -d "/tmp/rdmatool-agent-$1.XXXXXX")
export RDMATOOL_STATS=0 RDMATOOL_AGENT_KEY=$T/key # made by the first agent; never the user's own
cleanup() {
	for r in 0 1 2; do
		[ -f "$T/a$r/agent.$r.pid" ] && kill -9 "$(cat "$T/a$r/agent.$r.pid")" 2>/dev/null
	done
	wait 2>/dev/null || true
	rm -rf "$T"
}
trap cleanup EXIT
hosts=$(python3 -c 'import socket
ss = [socket.socket() for _ in range(3)]
for s in ss: s.bind(("127.0.0.1", 0))
print(",".join("127.0.0.1:%d" % s.getsockname()[1] for s in ss))')
A() {
	local r=$1
	shift
	RDMATOOL_AGENT_DIR=$T/a$r timeout "$A_TIMEOUT" "$RDMATOOL" "$@"
}
X() {
	local r=$1
	shift
	RDMATOOL_AGENT_DIR=$T/a$r timeout 90 "$TRAFFIC" "$1" "$r" "${@:2}"
}
links_up() { [ "$(A "$1" -j agent status | jq '[.peers[] | select(.state == "up")] | length')" = 2 ]; }
wait_for() {
	for _ in $(seq 500); do
		"$@" && return 0
		sleep 0.02
	done
	return 1
}
