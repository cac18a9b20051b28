#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The path an Open MPI user takes, on the three-node cluster of lib/netns_cluster.sh (one network
# namespace per node, names from a test-private /etc/hosts): mpirun on the head node starts its
# orted daemons through a launch agent that enters a node's namespaces (where a cluster has
# ssh), and `mpirun -N 1 --host n1,n2,n3 rdmatool agent foreground --hostfile=FILE` forms the
# fabric, each agent's rank from OMPI_COMM_WORLD_RANK.  Client jobs move messages between the
# nodes and check them; killing mpirun stops the agents.  A host file in another order than the
# launch, and two agents per node, fail at once with a message saying what to do.
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
for tool in mpirun orted jq; do
	command -v $tool >/dev/null || fail "$tool missing; run 'make deps' (packages openmpi-bin, jq)"
done
TRAFFIC=$BUILD/tests/tools/agent_traffic
[ -x "$TRAFFIC" ] || fail "$TRAFFIC missing; run 'make check'"
TRAFFIC=$(cd "$(dirname "$TRAFFIC")" && pwd)/agent_traffic
. "$(dirname "$0")/lib/netns_cluster.sh" agent_mpirun 3

cluster_cleanup_hook() {
	[ "$1" = 0 ] || for f in "$NC"/agents.out "$NC"/bad.out; do
		[ -f "$f" ] && { echo "--- ${f#"$NC"/} (last 20 lines):"; tail -n 20 "$f"; } >&2
	done
	return 0
}

# Open MPI's launch agent: `rsh [OPTIONS] HOST COMMAND...` runs the shell line COMMAND on HOST,
# as ssh would.
cat >"$NC/bin/rsh" <<'EOF'
#!/bin/sh
while [ "${1#-}" != "$1" ]; do shift; done
host=$1
shift
exec "$(dirname "$0")/on_node" "$host" sh -c "$*"
EOF
chmod 755 "$NC/bin/rsh"
printf 'n1 slots=1\nn2 slots=1\nn3 slots=1\n' >"$NC/hostfile"
printf 'n3\nn2\nn1\n' >"$NC/reversed"
# Root runs mpirun here; the agents' key is the test's (a cluster's home directory would hold it).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_plm_rsh_agent=$NC/bin/rsh
export RDMATOOL_AGENT_KEY=$NC/key RDMATOOL_STATS=0
mpi() { # mpirun on the head node, one task per node, with the agent's variables
	on_node ctl timeout 60 mpirun -N 1 --host n1,n2,n3 -x RDMATOOL_AGENT_KEY -x RDMATOOL_STATS "$@"
}

# Two tasks per node: every agent says how to launch, none takes a rank another has.
set +e
on_node ctl timeout 60 mpirun -N 2 --host n1:2,n2:2,n3:2 "$RDMATOOL" agent foreground \
	--hostfile="$NC/hostfile" >"$NC/bad.out" 2>&1
rc=$?
set -e
[ $rc != 0 ] && grep -q 'OMPI_COMM_WORLD_LOCAL_SIZE=2: the launcher started 2 tasks on this node.*one agent per node' \
	"$NC/bad.out" || fail "two agents per node were not refused: $rc"
# A host file in another order than mpirun's: the agents whose entry is not their node refuse.
set +e
mpi "$RDMATOOL" agent foreground --hostfile="$NC/reversed" >"$NC/bad.out" 2>&1
rc=$?
set -e
[ $rc != 0 ] && grep -q 'OMPI_COMM_WORLD_RANK=0 names n3, entry 0 of --hostfile=.*, but this machine is n1, entry 2' \
	"$NC/bad.out" || fail "a host file in another order was taken: $rc"

start=$SECONDS
"$NC/bin/on_node" ctl mpirun -N 1 --host n1,n2,n3 -x RDMATOOL_AGENT_KEY -x RDMATOOL_STATS \
	"$RDMATOOL" agent foreground --hostfile="$NC/hostfile" >"$NC/agents.out" 2>&1 &
mpirun_pid=$! # mpirun itself: on_node execs it
cluster_pid $mpirun_pid
links_up() { # NODE: its agent has both links up
	[ "$(on_node "$1" "$RDMATOOL" -j agent status 2>/dev/null | jq '[.peers[]? | select(.state == "up")] | length' 2>/dev/null)" = 2 ]
}
for i in 1 2 3; do cluster_wait 30 links_up $i || fail "node n$i's agent has no fabric: $(on_node $i "$RDMATOOL" agent status 2>&1)"; done
echo "fabric formed $((SECONDS - start)) s after mpirun"
for r in 0 1 2; do
	grep -q "3 node(s) from --hostfile=$NC/hostfile; rank $r from OMPI_COMM_WORLD_RANK" "$NC/agents.out" ||
		fail "no startup line says rank $r came from OMPI_COMM_WORLD_RANK: $(cat "$NC/agents.out")"
done
[ "$(on_node 3 "$RDMATOOL" -j agent status | jq -c '[.rank, [.peers[].host]]')" = '[2,["n1","n2"]]' ] ||
	fail "node n3's agent is not rank 2 with peers n1 and n2: $(on_node 3 "$RDMATOOL" -j agent status)"

# Client jobs, as in agent_slurm: 300 checked messages from every node to the next, then a 3 MB
# file deposited on the next node and read back from the node after it (remote GETMSG).
mpi "$RDMATOOL" agent chan create in || fail "chan create job"
mpi "$RDMATOOL" agent chan create blob || fail "chan create job"
mkdir "$NC/out"
mpi sh -c 'r=$OMPI_COMM_WORLD_RANK; "$1" send $r $(((r + 1) % 3))/in $r 300 $((r + 7)) 1048576 >"$2/send.$r" 2>&1 &
	"$1" recv $r in 5000 300 >"$2/recv.$r" 2>&1; rc=$?; wait $! && exit $rc' sh "$TRAFFIC" "$NC/out" ||
	fail "traffic job: $(tail -n 3 "$NC"/out/*)"
for r in 0 1 2; do
	from=$(((r + 2) % 3))
	grep -qx 'sent 300 eagain [0-9]* failed 0' "$NC/out/send.$r" || fail "node $r's sender: $(cat "$NC/out/send.$r")"
	grep -qx 'received 300 timeouts [0-9]*' "$NC/out/recv.$r" || fail "node $r's receiver: $(tail -n 3 "$NC/out/recv.$r")"
	[ "$(grep -c "^$from " "$NC/out/recv.$r")" = 300 ] || fail "node $r got messages from another node than $from"
done
head -c 3000000 /dev/urandom >"$NC/blob"
mpi sh -c 'r=$OMPI_COMM_WORLD_RANK; "$1" agent send $(((r + 1) % 3))/blob "$2/blob" --mode=deposited --timeout=20000' \
	sh "$RDMATOOL" "$NC" || fail "blob send job"
mpi sh -c 'r=$OMPI_COMM_WORLD_RANK; "$1" -j agent recv $(((r + 2) % 3))/blob --timeout=20000' \
	sh "$RDMATOOL" >"$NC/out/getmsg" || fail "remote GETMSG job: $(cat "$NC/out/getmsg")"
sum=$(sha256sum <"$NC/blob" | cut -d' ' -f1)
[ "$(jq -c '[.len, .sha256]' "$NC/out/getmsg" | sort | uniq -c | tr -s ' ')" = " 3 [3000000,\"$sum\"]" ] ||
	fail "the 3 MB messages changed on the way (sha256 $sum): $(cat "$NC/out/getmsg")"

mpi "$RDMATOOL" agent chan destroy in || fail "chan destroy job"
mpi "$RDMATOOL" agent chan destroy blob || fail "chan destroy job"

# SIGTERM to mpirun (as a job scheduler's kill does) stops the agents: mpirun returns, no agent
# is left on a node.
kill -TERM $mpirun_pid
mpirun_gone() { ! kill -0 $mpirun_pid 2>/dev/null; }
agents_gone() { ! on_node "$1" "$RDMATOOL" agent status >/dev/null 2>&1; }
cluster_wait 20 mpirun_gone || fail "mpirun did not return after SIGTERM"
for i in 1 2 3; do cluster_wait 20 agents_gone $i || fail "node n$i's agent still runs after mpirun ended"; done
echo "agent_mpirun: $((SECONDS - start)) s from mpirun to its end"

# README's Open MPI recipe, as written there but for the host names: it starts the agents, waits
# for their links, says hello to the next node and stops the agents.
mkdir -p "$NC/recipe/bin"
ln -s "$RDMATOOL" "$NC/recipe/bin/rdmatool"
sed -n "/^printf '%s\\\\n' node1 node2 node3 node4 >hosts\$/,/^wait\$/p" "$RDMATOOL_TOP/README.md" |
	sed "1s/.*/printf '%s\\\\n' n1 n2 n3 >hosts/" >"$NC/recipe/recipe.sh"
grep -q '^mpirun -N 1 --hostfile hosts rdmatool agent foreground --hostfile=hosts &$' "$NC/recipe/recipe.sh" ||
	fail "README.md has no Open MPI recipe (printf ... >hosts ... wait): $(cat "$NC/recipe/recipe.sh")"
start=$SECONDS
(cd "$NC/recipe" && PATH=$NC/recipe/bin:$PATH on_node ctl timeout 60 sh -e recipe.sh >out 2>&1) ||
	fail "README's Open MPI recipe failed: $(cat "$NC/recipe/out")"
for i in 1 2 3; do
	grep -qx "n$i: hello from n$(((i + 1) % 3 + 1))" "$NC/recipe/out" &&
		grep -q "agent rank $((i - 1)) (pid [0-9]*) stopped" "$NC/recipe/out" ||
		fail "README's Open MPI recipe, node n$i: $(cat "$NC/recipe/out")"
done
echo "README's Open MPI recipe: $((SECONDS - start)) s"
