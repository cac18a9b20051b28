# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/integration/lib/netns_agents.sh: what the launcher tests (agent_slurm, agent_mpirun) check
# on the three agents of lib/netns_cluster.sh's nodes, whatever started them.  Sourced after it;
# needs jq and $BUILD/tests/tools/agent_traffic.  Defines
#   links_up N                  node N's agent has its two links up
#   wait_fabric                 waits (30 s) for every node's links
#   agents_gone N               no agent runs on node N
#   check_startup HOSTS RANKVAR every agent's startup line (in $NC/agents.out) says its node list
#                               came from HOSTS and its rank from RANKVAR; n2's agent is rank 1
#   client_jobs RUN RANKVAR     the client traffic, through RUN CMD... (runs CMD once on every
#                               node, RANKVAR holding the node's rank there, e.g. srun -N3)
#   check_recipe WHAT OUT       OUT, the output of README's WHAT recipe: every node said hello to
#                               the next one, every agent stopped, no step failed
command -v jq >/dev/null || fail "jq missing; run 'make deps'"
TRAFFIC=$BUILD/tests/tools/agent_traffic
[ -x "$TRAFFIC" ] || fail "$TRAFFIC missing; run 'make check'"
TRAFFIC=$(cd "$(dirname "$TRAFFIC")" && pwd)/agent_traffic
[ "$NODES" = 3 ] || fail "netns_agents.sh: written for 3 nodes"

links_up() {
	[ "$(on_node "$1" "$RDMATOOL" -j agent status 2>/dev/null |
		jq '[.peers[]? | select(.state == "up")] | length' 2>/dev/null)" = 2 ]
}
wait_fabric() {
	local i
	for i in 1 2 3; do
		cluster_wait 30 links_up $i || fail "node n$i's agent has no fabric: $(on_node $i "$RDMATOOL" agent status 2>&1)"
	done
}
agents_gone() { ! on_node "$1" "$RDMATOOL" agent status >/dev/null 2>&1; }
check_startup() {
	local r
	for r in 0 1 2; do
		grep -q "3 node(s) from $1; rank $r from $2" "$NC/agents.out" ||
			fail "no startup line says rank $r came from $2 and the nodes from $1: $(cat "$NC/agents.out")"
	done
	[ "$(on_node 2 "$RDMATOOL" -j agent status | jq -c '[.rank, [.peers[].host]]')" = '[1,["n1","n3"]]' ] ||
		fail "node n2's agent is not rank 1 with peers n1 and n3: $(on_node 2 "$RDMATOOL" -j agent status)"
}

# Every node makes two channels, then sends 300 numbered, checksummed messages of up to 1 MiB
# (random return modes; large ones go in chunks) to the next node's channel while it takes the
# 300 of the node before it: each arrives once, whole, in order (agent_traffic checks).  Then the
# shell client: a 3 MB file deposited on the next node and read back from the node after that
# with a remote GETMSG, byte for byte; and the channels go (they would outlive the agents).
client_jobs() {
	local run=$1 rank="r=\$$2;" r from sum
	$run "$RDMATOOL" agent chan create in || fail "chan create job"
	$run "$RDMATOOL" agent chan create blob || fail "chan create job"
	mkdir "$NC/out"
	$run sh -c "$rank"' "$1" send $r $(((r + 1) % 3))/in $r 300 $((r + 7)) 1048576 >"$2/send.$r" 2>&1 &
		"$1" recv $r in 5000 300 >"$2/recv.$r" 2>&1; rc=$?; wait $! && exit $rc' sh "$TRAFFIC" "$NC/out" ||
		fail "traffic job: $(tail -n 3 "$NC"/out/*)"
	for r in 0 1 2; do
		from=$(((r + 2) % 3))
		grep -qx 'sent 300 eagain [0-9]* failed 0' "$NC/out/send.$r" || fail "node $r's sender: $(cat "$NC/out/send.$r")"
		grep -qx 'received 300 timeouts [0-9]*' "$NC/out/recv.$r" ||
			fail "node $r's receiver: $(tail -n 3 "$NC/out/recv.$r")"
		[ "$(grep -c "^$from " "$NC/out/recv.$r")" = 300 ] || fail "node $r got messages from another node than $from"
	done
	head -c 3000000 /dev/urandom >"$NC/blob"
	$run sh -c "$rank"' "$1" agent send $(((r + 1) % 3))/blob "$2/blob" --mode=deposited --timeout=20000' \
		sh "$RDMATOOL" "$NC" || fail "blob send job"
	$run sh -c "$rank"' "$1" -j agent recv $(((r + 2) % 3))/blob --timeout=20000' \
		sh "$RDMATOOL" >"$NC/out/getmsg" || fail "remote GETMSG job: $(cat "$NC/out/getmsg")"
	sum=$(sha256sum <"$NC/blob" | cut -d' ' -f1)
	[ "$(jq -c '[.len, .sha256]' "$NC/out/getmsg" | sort | uniq -c | tr -s ' ')" = " 3 [3000000,\"$sum\"]" ] ||
		fail "the 3 MB messages changed on the way (sha256 $sum): $(cat "$NC/out/getmsg")"
	$run "$RDMATOOL" agent chan destroy in || fail "chan destroy job"
	$run "$RDMATOOL" agent chan destroy blob || fail "chan destroy job"
}

check_recipe() {
	local i
	! grep 'rdmatool agent: ' "$2" | grep -v ') stopped$' || fail "README's $1 recipe: a step failed: $(cat "$2")"
	for i in 1 2 3; do
		grep -qx "n$i: hello from n$(((i + 1) % 3 + 1))" "$2" &&
			grep -q "agent rank $((i - 1)) (pid [0-9]*) stopped" "$2" ||
			fail "README's $1 recipe, node n$i: $(cat "$2")"
	done
}
