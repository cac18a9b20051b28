# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/integration/lib/netns_slurm.sh: Slurm on the cluster of lib/netns_cluster.sh (sourced
# after it): munged on a key and socket of the test's own, slurmctld on the head node and one
# slurmd per node on a test-private configuration ($SLURM_CONF, exported), state and logs, all
# in $NC.  Returns once every node is idle.  On exit every job is cancelled (the daemons go with
# the cluster); a failed test shows the daemons' logs and $NC/agents.out.
for tool in munged slurmctld slurmd srun sinfo squeue scancel; do
	command -v $tool >/dev/null || fail "$tool missing; run 'make deps' (packages slurm-wlm, munge)"
done
[ "$NODES" -le 9 ] || fail "netns_slurm.sh: at most 9 nodes"

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
mkdir -p "$NC/slurm/state" $(seq -f "$NC/slurm/n%g" "$NODES")
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
NodeName=n[1-$NODES] CPUs=2 State=UNKNOWN
PartitionName=test Nodes=n[1-$NODES] Default=YES MaxTime=10 State=UP
EOF
: >"$NC/slurm/plugstack.conf"
export SLURM_CONF=$NC/slurm/conf
"$NC/bin/on_node" ctl slurmctld -D -i >"$NC/slurm/slurmctld.out" 2>&1 &
cluster_pid $!
for i in $(seq "$NODES"); do
	"$NC/bin/on_node" $i slurmd -D -N "n$i" >"$NC/slurm/slurmd.n$i.out" 2>&1 &
	cluster_pid $!
done
nodes_idle() { [ "$(on_node ctl sinfo -h -N -o %t 2>/dev/null | sort -u | tr -d ' \n')" = idle ]; }
cluster_wait 30 nodes_idle || fail "the Slurm nodes are not idle: $(on_node ctl sinfo -N 2>&1)"
