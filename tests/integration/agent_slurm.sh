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
command -v jq >/dev/null || fail "jq missing; run 'make deps'"
TRAFFIC=$BUILD/tests/tools/agent_traffic
[ -x "$TRAFFIC" ] || fail "$TRAFFIC missing; run 'make check'"
TRAFFIC=$(cd "$(dirname "$TRAFFIC")" && pwd)/agent_traffic
. "$(dirname "$0")/lib/netns_cluster.sh" agent_slurm 3
. "$(dirname "$0")/lib/netns_slurm.sh"

# The agents: one per node, everything from Slurm's environment.  The key is the test's
# (a cluster's home directory would hold it); no stats segments.
export RDMATOOL_AGENT_KEY=$NC/key RDMATOOL_STATS=0
start=$SECONDS
"$NC/bin/on_node" ctl srun -N3 -l "$RDMATOOL" agent foreground >"$NC/agents.out" 2>&1 &
srun_pid=$! # srun itself: on_node execs it
cluster_pid $srun_pid
links_up() { # NODE: its agent has both links up
	[ "$(on_node "$1" "$RDMATOOL" -j agent status 2>/dev/null | jq '[.peers[]? | select(.state == "up")] | length' 2>/dev/null)" = 2 ]
}
for i in 1 2 3; do cluster_wait 30 links_up $i || fail "node n$i's agent has no fabric: $(on_node $i "$RDMATOOL" agent status 2>&1)"; done
echo "fabric formed $((SECONDS - start)) s after srun"
for r in 0 1 2; do
	grep -q "^$r: .*3 node(s) from SLURM_JOB_NODELIST; rank $r from SLURM_NODEID" "$NC/agents.out" ||
		fail "task $r's startup line does not say its node list and rank came from Slurm: $(cat "$NC/agents.out")"
done
[ "$(on_node 2 "$RDMATOOL" -j agent status | jq -c '[.rank, [.peers[].host]]')" = '[1,["n1","n3"]]' ] ||
	fail "node n2's agent is not rank 1 with peers n1 and n3: $(on_node 2 "$RDMATOOL" -j agent status)"

# Client jobs.  Every node makes a channel, then sends 300 numbered, checksummed messages of up
# to 1 MiB (random return modes; large ones go in chunks) to the next node's channel while it
# takes the 300 of the node before it: each arrives once, whole, in order (agent_traffic
# checks).  Then the shell client: a 3 MB file deposited on the next node, read back from the
# node after that with a remote GETMSG, byte for byte.
job() { on_node ctl timeout 60 srun -N3 "$@"; }
job "$RDMATOOL" agent chan create in || fail "chan create job"
job "$RDMATOOL" agent chan create blob || fail "chan create job"
mkdir "$NC/out"
job sh -c 'r=$SLURM_NODEID; "$1" send $r $(((r + 1) % 3))/in $r 300 $((r + 7)) 1048576 >"$2/send.$r" 2>&1 &
	"$1" recv $r in 5000 300 >"$2/recv.$r" 2>&1; rc=$?; wait $! && exit $rc' sh "$TRAFFIC" "$NC/out" ||
	fail "traffic job: $(tail -n 3 "$NC"/out/*)"
for r in 0 1 2; do
	from=$(((r + 2) % 3))
	grep -qx 'sent 300 eagain [0-9]* failed 0' "$NC/out/send.$r" || fail "node $r's sender: $(cat "$NC/out/send.$r")"
	grep -qx 'received 300 timeouts [0-9]*' "$NC/out/recv.$r" || fail "node $r's receiver: $(tail -n 3 "$NC/out/recv.$r")"
	[ "$(grep -c "^$from " "$NC/out/recv.$r")" = 300 ] || fail "node $r got messages from another node than $from"
done
head -c 3000000 /dev/urandom >"$NC/blob"
job sh -c 'r=$SLURM_NODEID; "$1" agent send $(((r + 1) % 3))/blob "$2/blob" --mode=deposited --timeout=20000' \
	sh "$RDMATOOL" "$NC" || fail "blob send job"
job sh -c 'r=$SLURM_NODEID; "$1" -j agent recv $(((r + 2) % 3))/blob --timeout=20000' \
	sh "$RDMATOOL" >"$NC/out/getmsg" || fail "remote GETMSG job: $(cat "$NC/out/getmsg")"
sum=$(sha256sum <"$NC/blob" | cut -d' ' -f1)
[ "$(jq -c '[.len, .sha256]' "$NC/out/getmsg" | sort | uniq -c | tr -s ' ')" = " 3 [3000000,\"$sum\"]" ] ||
	fail "the 3 MB messages changed on the way (sha256 $sum): $(cat "$NC/out/getmsg")"

job "$RDMATOOL" agent chan destroy in || fail "chan destroy job"
job "$RDMATOOL" agent chan destroy blob || fail "chan destroy job"

# scancel stops the agents (SIGTERM to every task): srun returns, no agent is left on a node.
job_id=$(on_node ctl squeue -h -o %i -t RUNNING)
[ -n "$job_id" ] || fail "no job holds the agents"
on_node ctl scancel "$job_id"
srun_gone() { ! kill -0 $srun_pid 2>/dev/null; }
agents_gone() { ! on_node "$1" "$RDMATOOL" agent status >/dev/null 2>&1; }
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
! grep 'rdmatool agent: ' "$NC"/recipe/slurm-*.out | grep -v ') stopped$' ||
	fail "README's Slurm recipe: a step failed: $(cat "$NC"/recipe/slurm-*.out)"
for i in 1 2 3; do
	grep -qx "n$i: hello from n$(((i + 1) % 3 + 1))" "$NC"/recipe/slurm-*.out &&
		grep -q "agent rank $((i - 1)) (pid [0-9]*) stopped" "$NC"/recipe/slurm-*.out ||
		fail "README's Slurm recipe, node n$i: $(cat "$NC"/recipe/slurm-*.out)"
done
echo "README's Slurm recipe: $((SECONDS - start)) s"
