#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The path a Slurm user takes: a three-node Slurm cluster on this machine (lib/netns_cluster.sh:
# one network namespace per node, names from a test-private /etc/hosts), with Debian's munge
# and slurm-wlm started here on a test-private key, socket, configuration and state; then
# `srun -N3 rdmatool agent foreground`, with no option, forms the fabric (node list from
# SLURM_JOB_NODELIST, rank from SLURM_NODEID), client jobs move messages between the nodes
# (the shell client and the client API, every message checked), and scancel stops the agents.
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
. "$(dirname "$0")/lib/netns_cluster.sh" agent_slurm 3
. "$(dirname "$0")/lib/netns_slurm.sh"
. "$(dirname "$0")/lib/netns_agents.sh"

# The agents: one per node, everything from Slurm's environment.  The key is the test's
# (a cluster's home directory would hold it); no stats segments.
export RDMATOOL_AGENT_KEY=$NC/key RDMATOOL_STATS=0
start=$SECONDS
"$NC/bin/on_node" ctl srun -N3 -l "$RDMATOOL" agent foreground >"$NC/agents.out" 2>&1 &
srun_pid=$! # srun itself: on_node execs it
cluster_pid $srun_pid
wait_fabric
echo "fabric formed $((SECONDS - start)) s after srun"
check_startup SLURM_JOB_NODELIST SLURM_NODEID

# Client jobs (lib/netns_agents.sh), each a job of its own on the three nodes.
job() { on_node ctl timeout 60 srun -N3 "$@"; }
client_jobs job SLURM_NODEID

# scancel stops the agents (SIGTERM to every task): srun returns, no agent is left on a node.
job_id=$(on_node ctl squeue -h -o %i -t RUNNING)
[ -n "$job_id" ] || fail "no job holds the agents"
on_node ctl scancel "$job_id"
srun_gone() { ! kill -0 $srun_pid 2>/dev/null; }
cluster_wait 20 srun_gone || fail "srun did not return after scancel"
for i in 1 2 3; do cluster_wait 20 agents_gone $i || fail "node n$i's agent still runs after scancel"; done
for r in 0 1 2; do
	grep -q "^$r: .*agent $r stopping: " "$NC/agents.out" || fail "agent $r did not stop cleanly on scancel"
done
echo "agent_slurm: $((SECONDS - start)) s from srun to scancel"

# README's Slurm recipe, as written there but for the node count: a batch script whose steps
# start the agents, wait for their links, say hello to the next node and stop the agents.
mkdir -p "$NC/recipe/bin"
ln -s "$RDMATOOL" "$NC/recipe/bin/rdmatool"
sed -n "/^cat >agents.sbatch <<'EOF'\$/,/^EOF\$/p" "$RDMATOOL_TOP/README.md" | sed '1d;$d' |
	sed 's/--nodes=4/--nodes=3/' >"$NC/recipe/agents.sbatch"
grep -q '^srun --overlap rdmatool agent foreground &$' "$NC/recipe/agents.sbatch" ||
	fail "README.md has no Slurm recipe (cat >agents.sbatch <<'EOF' ... EOF)"
start=$SECONDS
# sbatch --wait polls every few seconds; squeue every 0.1 s.
job_id=$(cd "$NC/recipe" && PATH=$NC/recipe/bin:$PATH on_node ctl sbatch --parsable agents.sbatch)
job_done() { [ -z "$(on_node ctl squeue -h -j "$job_id" 2>/dev/null)" ]; }
cluster_wait 60 job_done || fail "README's Slurm recipe still runs after 60 s: $(cat "$NC"/recipe/slurm-*.out)"
on_node ctl scontrol -o show job "$job_id" | grep -q 'JobState=COMPLETED .* ExitCode=0:0' ||
	fail "README's Slurm recipe failed: $(on_node ctl scontrol show job "$job_id"; cat "$NC"/recipe/slurm-*.out)"
check_recipe Slurm "$NC"/recipe/slurm-*.out
echo "README's Slurm recipe: $((SECONDS - start)) s"
