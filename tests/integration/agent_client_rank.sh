#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# A client talks to the agent running in its agent directory, whatever the launcher's environment
# says of the client's own job (issue 47, a launcher finding): a job step on other nodes than the
# agents' (srun -N1 -w n2 gives SLURM_NODEID=0 on the node whose agent is rank 1), or a world rank
# that counts tasks, named another node's agent, so status said no agent ran and a send to node 0
# was taken for this node and went into a local channel.  The environment still chooses among
# several agents that share one directory, and --rank still wins.
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
. "$(dirname "$0")/lib/two_agents.sh" client-rank
start_two
A 0 agent chan create q || fail "create q on node 0"
A 1 agent chan create q || fail "create q on node 1"

# On node 1 (agent rank 1), a client of a step whose only node is this one: SLURM_NODEID=0.
step() { (export SLURM_JOB_NODELIST='n[2]' SLURM_NODEID=0 SLURM_NNODES=1 && "$@"); }
[ "$(step A 1 -j agent status | jq .rank)" = 1 ] || fail "status under SLURM_NODEID=0 on rank 1's node: $(step A 1 agent status 2>&1)"
echo to-node-0 | step A 1 agent send 0/q --mode=deposited --timeout=5000 || fail "send 0/q from node 1 under SLURM_NODEID=0"
[ "$(A 0 -j agent poll q | jq .count)" = 1 ] || fail "the message for node 0 did not reach node 0"
[ "$(A 1 -j agent poll q | jq .count)" = 0 ] || fail "the message for node 0 went into node 1's own channel"
[ "$(A 0 agent recv q --timeout=2000)" = to-node-0 ] || fail "node 0 got another message"
# The same with a world rank that counts tasks (mpirun on other nodes: task 1 runs on node 0's machine).
echo to-node-1 | (export OMPI_COMM_WORLD_RANK=1 OMPI_COMM_WORLD_SIZE=2 && A 0 agent send 1/q --mode=deposited --timeout=5000) ||
	fail "send 1/q from node 0 under OMPI_COMM_WORLD_RANK=1"
[ "$(A 1 agent recv q --timeout=2000)" = to-node-1 ] || fail "the message for node 1 did not reach node 1"
[ "$(A 0 -j agent poll q | jq .count)" = 0 ] || fail "the message for node 1 went into node 0's own channel"
# --rank still names the agent: rank 0 does not run in node 1's directory.
rc=0
A 1 agent status --rank=0 >/dev/null 2>&1 || rc=$?
[ $rc = 3 ] || fail "status --rank=0 in node 1's directory: exit $rc, want 3 (no agent of rank 0 there)"
for r in 0 1; do A $r -q agent stop || fail "stop $r"; done

# Two ranks in one directory (two agents of one machine): the environment chooses between them.
mkdir -m 700 "$T/both"
for r in 0 1; do
	RDMATOOL_AGENT_DIR=$T/both timeout 30 "$RDMATOOL" -q agent start --hosts="$hosts" --rank=$r ||
		fail "agent $r in a shared directory did not start: $(cat "$T/both/agent.$r.log")"
done
for r in 0 1; do
	got=$(SLURM_JOB_NODELIST='n[1-2]' SLURM_NODEID=$r RDMATOOL_AGENT_DIR=$T/both timeout 30 "$RDMATOOL" -j agent status | jq .rank)
	[ "$got" = $r ] || fail "SLURM_NODEID=$r with both agents in one directory reached rank $got"
done
got=$(SLURM_JOB_NODELIST='n[1-3]' SLURM_NODEID=2 RDMATOOL_AGENT_DIR=$T/both timeout 30 "$RDMATOOL" -j agent status | jq .rank)
[ "$got" = 0 ] || fail "SLURM_NODEID=2, which runs no agent here, reached rank $got, not the first running one"
for r in 0 1; do RDMATOOL_AGENT_DIR=$T/both timeout 30 "$RDMATOOL" -q agent stop --rank=$r || fail "stop $r"; done
echo "agent client rank: clients reach the agent of their directory whatever the launcher says"
