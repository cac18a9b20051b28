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
for tool in mpirun orted; do
	command -v $tool >/dev/null || fail "$tool missing; run 'make deps' (package openmpi-bin)"
done
. "$(dirname "$0")/lib/netns_cluster.sh" agent_mpirun 3
. "$(dirname "$0")/lib/netns_agents.sh"

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
# Its daemons talk over the cluster's network only.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_plm_rsh_agent=$NC/bin/rsh
export OMPI_MCA_oob_tcp_if_include=$NET.0/24
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
# (mpirun ends the job at the first agent that refuses: rank 0's or rank 2's.)
[ $rc != 0 ] && grep -Eq 'OMPI_COMM_WORLD_RANK=(0 names n3, entry 0|2 names n1, entry 2) of --hostfile=.*, but this machine is (n1, entry 2|n3, entry 0)' \
	"$NC/bad.out" || fail "a host file in another order was taken: $rc"

start=$SECONDS
"$NC/bin/on_node" ctl mpirun -N 1 --host n1,n2,n3 -x RDMATOOL_AGENT_KEY -x RDMATOOL_STATS \
	"$RDMATOOL" agent foreground --hostfile="$NC/hostfile" >"$NC/agents.out" 2>&1 &
mpirun_pid=$! # mpirun itself: on_node execs it
cluster_pid $mpirun_pid
wait_fabric
echo "fabric formed $((SECONDS - start)) s after mpirun"
check_startup "--hostfile=$NC/hostfile" OMPI_COMM_WORLD_RANK

# Client jobs (lib/netns_agents.sh), each an mpirun of its own on the three nodes.
client_jobs mpi OMPI_COMM_WORLD_RANK

# SIGTERM to mpirun (as a job scheduler's kill does) stops the agents: mpirun returns, no agent
# is left on a node.
kill -TERM $mpirun_pid
mpirun_gone() { ! kill -0 $mpirun_pid 2>/dev/null; }
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
check_recipe "Open MPI" "$NC/recipe/out"
echo "README's Open MPI recipe: $((SECONDS - start)) s"
