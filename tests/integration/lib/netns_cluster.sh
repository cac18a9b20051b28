# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/integration/lib/netns_cluster.sh NAME NODES: a cluster of NODES nodes n1..nN and a head
# node "ctl" on this machine, for the launcher tests (agent_slurm, agent_mpirun).  Sourced after
# `set -eu` and fail(), before anything else runs: it skips the test (exit 77) where network
# namespaces cannot be made, and otherwise runs the test again in a mount namespace of its own,
# where everything below is private to the test and goes away with it:
#   - /run/netns is a fresh tmpfs: the namespaces' names are the test's alone;
#   - each node is a network namespace with one veth to a bridge in ctl's namespace, address
#     $NET.N/24 (ctl: $NET.254); the addresses exist only inside these namespaces, nothing
#     touches the machine's own interfaces or routes;
#   - /etc/hosts is a copy of the machine's plus the nodes' names (a bind mount), so a node name
#     resolves the way a cluster's DNS would resolve it, for Slurm, Open MPI and the agents alike;
#   - on_node runs a command on a node: in its network namespace, with its own host name (a UTS
#     namespace) and its own /dev/shm ($NC/nN/shm bound over it in a mount namespace of its
#     own), as separate hosts would have.
# It defines $NC (the test's directory, removed on exit), $NET, $NODES, and
#   on_node N CMD...     CMD on node N (1..NODES, or nN), or on the head node for N = ctl;
#                        $NC/bin/on_node is the same as a program, which execs CMD in the
#                        end: `"$NC/bin/on_node" N CMD &` makes $! CMD's own pid
#   cluster_pid PID      a daemon to kill (TERM, then KILL) when the test ends
#   cluster_wait S CMD.. retries CMD every 0.05 s for S seconds; 1 if it never succeeded
# Everything the test started through cluster_pid is stopped and the namespaces deleted on exit;
# a test adds its own cleanup by defining cluster_cleanup_hook.
NC_NAME=$1
NODES=$2
NET=10.251.0

if [ -z "${RDMATOOL_NETNS_INNER:-}" ]; then
	[ "$(id -u)" = 0 ] || { echo "SKIP: $NC_NAME needs root to make network namespaces"; exit 77; }
	for tool in ip unshare nsenter; do
		command -v $tool >/dev/null || fail "$tool missing; run 'make deps'"
	done
	# Can this machine (or container) make the namespaces, a veth pair and a bridge at all?
	if ! why=$(unshare --mount --net --uts --propagation private -- sh -c \
		'ip link add rdt0 type veth peer name rdt1 && ip link add rdt2 type bridge' 2>&1); then
		echo "SKIP: $NC_NAME: network namespaces cannot be made here: $why"
		exit 77
	fi
	RDMATOOL_NETNS_INNER=1 exec unshare --mount --propagation private -- bash "$0" # (tests take no arguments)
fi

NC=$(mktemp -d "/tmp/rdmatool-$NC_NAME.XXXXXX")
chmod 755 "$NC"
cluster_pids=()
cluster_pid() { cluster_pids+=("$1"); }
cluster_wait() {
	local secs=$1 end
	shift
	end=$((SECONDS + secs))
	while [ $SECONDS -lt $end ]; do
		"$@" && return 0
		sleep 0.05
	done
	"$@"
}
cluster_cleanup() {
	local status=$? pid
	set +e
	trap - EXIT
	trap '' PIPE # a reader of the test's output that went away must not stop the cleanup
	[ "$(type -t cluster_cleanup_hook)" = function ] && cluster_cleanup_hook "$status"
	for pid in "${cluster_pids[@]}"; do kill -TERM "$pid" 2>/dev/null; done
	for pid in "${cluster_pids[@]}"; do
		for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
		kill -KILL "$pid" 2>/dev/null
	done
	wait 2>/dev/null
	# What still runs in a node's namespace was started by the test (a job step, an orted): end it.
	for ns in ctl $(seq -f 'n%g' "$NODES"); do
		pids=$(ip netns pids "$ns" 2>/dev/null)
		[ -n "$pids" ] && kill -KILL $pids 2>/dev/null
		ip netns del "$ns" 2>/dev/null
	done
	rm -rf "$NC"
	exit "$status"
}
trap cluster_cleanup EXIT
trap 'exit 1' INT TERM

mkdir -p /run/netns
mount -t tmpfs -o mode=755 rdmatool-netns /run/netns
{
	cat /etc/hosts
	echo "# $NC_NAME: the test's cluster"
	echo "$NET.254 ctl"
	for i in $(seq "$NODES"); do echo "$NET.$i n$i"; done
} >"$NC/etc-hosts"
mount --bind "$NC/etc-hosts" /etc/hosts

# IPv4 only: an IPv6 link-local address is tentative for a while after a link comes up, and
# daemons that pick one (Open MPI's) would wait on it.
no_ipv6() { nsenter "--net=/run/netns/$1" sh -c 'echo 1 >/proc/sys/net/ipv6/conf/all/disable_ipv6 &&
	echo 1 >/proc/sys/net/ipv6/conf/default/disable_ipv6' 2>/dev/null || true; }
ip netns add ctl
no_ipv6 ctl
ip -n ctl link set lo up
ip -n ctl link add br0 type bridge
ip -n ctl addr add "$NET.254/24" dev br0
ip -n ctl link set br0 up
for i in $(seq "$NODES"); do
	ip netns add "n$i"
	no_ipv6 "n$i"
	ip -n "n$i" link set lo up
	ip -n "n$i" link add eth0 type veth peer name "p$i" netns ctl
	ip -n ctl link set "p$i" master br0 up
	ip -n "n$i" addr add "$NET.$i/24" dev eth0
	ip -n "n$i" link set eth0 up
	mkdir "$NC/n$i" && mkdir -m 1777 "$NC/n$i/shm"
done
mkdir "$NC/ctl" && mkdir -m 1777 "$NC/ctl/shm"

# on_node as a program too ($NC/bin/on_node), for what runs commands itself (Open MPI's launch
# agent).  nsenter, not `ip netns exec`: that one mounts a fresh /sys, without the
# /sys/fs/cgroup that slurmd wants to find.
mkdir "$NC/bin"
cat >"$NC/bin/on_node" <<'EOF'
#!/bin/sh
# on_node N|nN|ctl CMD...: CMD on that node of the test's cluster ($NC is two levels up).
nc=$(dirname "$(dirname "$(readlink -f "$0")")")
case "$1" in
ctl | n[0-9]*) name=$1 ;;
*) name=n$1 ;;
esac
shift
exec nsenter "--net=/run/netns/$name" unshare --uts --mount -- sh -c \
	'echo "$1" >/proc/sys/kernel/hostname && mount --bind "$2" /dev/shm && shift 2 && exec "$@"' \
	sh "$name" "$nc/$name/shm" "$@"
EOF
chmod 755 "$NC/bin/on_node"
on_node() { "$NC/bin/on_node" "$@"; }
