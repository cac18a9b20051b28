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
for tool in munged slurmctld slurmd srun sinfo squeue scancel jq; do
	command -v $tool >/dev/null || fail "$tool missing; run 'make deps' (packages slurm-wlm, munge, jq)"
done
TRAFFIC=$BUILD/tests/tools/agent_traffic
[ -x "$TRAFFIC" ] || fail "$TRAFFIC missing; run 'make check'"
TRAFFIC=$(cd "$(dirname "$TRAFFIC")" && pwd)/agent_traffic
. "$(dirname "$0")/lib/netns_cluster.sh" agent_slurm 3

cluster_cleanup_hook() {
	if [ "$1" != 0 ]; then
		for f in "$NC"/agents.out "$NC"/slurm/*.log "$NC"/slurm/*.out "$NC"/munge/out; do
			[ -f "$f" ] && { echo "--- ${f#"$NC"/} (last 15 lines):"; tail -n 15 "$f"; } >&2
		done
	fi
	[ -f "$NC/slurm/conf" ] && on_node ctl scancel --full --quiet --signal=KILL "--user=$(id -un)" 2>/dev/null
	return 0
}

# munge: a key of the test's own in $NC/munge/etc (0700), its socket in $NC/munge (0755: every
# client must reach it), as munged wants them.
mkdir -m 755 "$NC/munge"
mkdir -m 700 "$NC/munge/etc"
head -c 1024 /dev/urandom >"$NC/munge/etc/key"
chmod 400 "$NC/munge/etc/key"
"$NC/bin/on_node" ctl munged -F --key-file="$NC/munge/etc/key" --socket="$NC/munge/sock" --pid-file="$NC/munge/etc/pid" \
	--log-file="$NC/munge/etc/log" --seed-file="$NC/munge/etc/seed" >"$NC/munge/out" 2>&1 &
cluster_pid $!
cluster_wait 10 test -S "$NC/munge/sock" || fail "munged did not start: $(cat "$NC/munge/out")"

# Slurm: slurmctld on the head node, one slurmd per node, state and logs in $NC/slurm.
mkdir -p "$NC/slurm/state" "$NC"/slurm/n{1,2,3}
cat >"$NC/slurm/conf" <<EOF
ClusterName=rdmatool-test
SlurmctldHost=ctl
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$NC/munge/sock
PlugStackConfig=$NC/slurm/plugstack.conf
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
KillWait=5
StateSaveLocation=$NC/slurm/state
SlurmdSpoolDir=$NC/slurm/%n
SlurmctldPidFile=$NC/slurm/slurmctld.pid
SlurmdPidFile=$NC/slurm/slurmd.%n.pid
SlurmctldLogFile=$NC/slurm/slurmctld.log
SlurmdLogFile=$NC/slurm/slurmd.%n.log
NodeName=n[1-3] CPUs=2 State=UNKNOWN
PartitionName=test Nodes=n[1-3] Default=YES MaxTime=10 State=UP
EOF
: >"$NC/slurm/plugstack.conf"
export SLURM_CONF=$NC/slurm/conf
"$NC/bin/on_node" ctl slurmctld -D -i >"$NC/slurm/slurmctld.out" 2>&1 &
cluster_pid $!
for i in 1 2 3; do
	"$NC/bin/on_node" $i slurmd -D -N "n$i" >"$NC/slurm/slurmd.n$i.out" 2>&1 &
	cluster_pid $!
done
nodes_idle() { [ "$(on_node ctl sinfo -h -N -o %t 2>/dev/null | sort -u | tr -d ' \n')" = idle ]; }
cluster_wait 30 nodes_idle || fail "the Slurm nodes are not idle: $(on_node ctl sinfo -N 2>&1)"

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

# scancel stops the agents (SIGTERM to every task): srun returns, no agent is left on a node.
job_id=$(on_node ctl squeue -h -o %i -t RUNNING)
[ -n "$job_id" ] || fail "no job holds the agents"
on_node ctl scancel "$job_id"
srun_gone() { ! kill -0 $srun_pid 2>/dev/null; }
agents_gone() { ! on_node "$1" "$RDMATOOL" agent status >/dev/null 2>&1; }
cluster_wait 20 srun_gone || fail "srun did not return after scancel"
for i in 1 2 3; do cluster_wait 20 agents_gone $i || fail "node n$i's agent still runs after scancel"; done
echo "agent_slurm: $((SECONDS - start)) s from srun to scancel"
