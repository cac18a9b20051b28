# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/integration/lib/ibsim.sh: run an ibsim fabric with opensm for one test.
# Source it, then:
#   ibsim_enter_netns "$@"   re-runs the test in a private network namespace
#                            (ibsim binds the fixed abstract socket sim:ctl)
#   ibsim_start NETFILE      ibsim + opensm, returns once every port has a LID
#   sim CMD...               runs a libibumad program attached to the fabric
#   ibsim_console LINE       sends a command to ibsim's console ("Error ...")
#   ibsim_lids / ibsim_switch_lids / ibsim_hca_lids
# ibsim_stop runs from an EXIT trap, also on failure.
# Exit 77 (skip) with the reason when a dependency is missing.

UMAD2SIM=${UMAD2SIM:-/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so}
IBSIM_DIR=""
IBSIM_PID=""
OPENSM_PID=""

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

ibsim_skip_unless_ready() {
	local c
	for c in ibsim opensm smpquery smpdump ibnetdiscover unshare ip; do
		command -v "$c" >/dev/null || {
			echo "skipped: '$c' is not installed; run 'make deps'"
			exit 77
		}
	done
	[ -e "$UMAD2SIM" ] || {
		echo "skipped: $UMAD2SIM is missing; run 'make deps' (libumad2sim0)"
		exit 77
	}
}

ibsim_enter_netns() {
	ibsim_skip_unless_ready
	if [ -z "${RDMATOOL_IBSIM_NETNS:-}" ]; then
		export RDMATOOL_IBSIM_NETNS=1
		if ! unshare -n true 2>/dev/null; then
			echo "skipped: cannot create a network namespace (unshare -n needs root or user namespaces)"
			exit 77
		fi
		exec unshare -n -- bash "$0" "$@"
	fi
	ip link set lo up
}

# Runs a libibumad program against the fabric.  umad2sim writes its fake
# sysfs under ./sys-<pid>, so everything runs in the fabric's directory.
# A sanitizer build must have its runtime first in the preload list.
. "$RDMATOOL_TOP/tests/integration/lib/sanitizer.sh"

sim() {
	local preload=$UMAD2SIM runtime
	runtime=$(sanitizer_runtime "$1")
	[ -n "$runtime" ] && preload="$runtime:$UMAD2SIM"
	(cd "$IBSIM_DIR" && LD_PRELOAD="$preload" \
		ASAN_OPTIONS="suppressions=$RDMATOOL_TOP/tests/sanitizers/asan.supp${ASAN_OPTIONS:+:$ASAN_OPTIONS}" \
		LSAN_OPTIONS="suppressions=$RDMATOOL_TOP/tests/sanitizers/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}" \
		TSAN_OPTIONS="suppressions=$RDMATOOL_TOP/tests/sanitizers/tsan.supp${TSAN_OPTIONS:+:$TSAN_OPTIONS}" \
		timeout -k 5 "${SIM_TIMEOUT:-60}" "$@")
}

ibsim_console() {
	echo "$*" >&7
}

ibsim_stop() {
	local rc=$?
	set +e
	if [ -n "$OPENSM_PID" ]; then
		kill "$OPENSM_PID" 2>/dev/null
		wait "$OPENSM_PID" 2>/dev/null
	fi
	if [ -n "$IBSIM_PID" ]; then
		kill "$IBSIM_PID" 2>/dev/null
		wait "$IBSIM_PID" 2>/dev/null
	fi
	exec 7>&-
	if [ $rc -ne 0 ] && [ -n "$IBSIM_DIR" ]; then
		echo "--- ibsim log" >&2
		tail -n 20 "$IBSIM_DIR/ibsim.log" >&2
		echo "--- opensm log" >&2
		tail -n 20 "$IBSIM_DIR/opensm.out" >&2
	fi
	[ -n "$IBSIM_DIR" ] && rm -rf "$IBSIM_DIR"
	return $rc
}

# Polls cmd until it succeeds, up to $1 tenths of a second.
wait_for() {
	local tenths=$1 i
	shift
	for ((i = 0; i < tenths; i++)); do
		"$@" && return 0
		sleep 0.1
	done
	return 1
}

ibsim_listening() {
	grep -q '@sim:ctl' /proc/net/unix
}

# Every node in the topology file is in ibnetdiscover's view with a LID.
ibsim_all_lids_assigned() {
	local want got
	want=$(grep -cE '^(Switch|Hca)' "$IBSIM_NET")
	got=$(ibsim_lid_table | awk '$3 > 0' | wc -l)
	[ "$got" -eq "$want" ]
}

# "type guid lid" per node, from a directed-route sweep (ibnetdiscover -p
# prints each link's LIDs; switches answer on port 0).
ibsim_lid_table() {
	SIM_TIMEOUT=10 sim ibnetdiscover -p 2>/dev/null | awk '
		{ for (side = 0; side < 2; side++) {
			i = side ? 7 : 1
			if ($i != "CA" && $i != "SW") continue
			key = $(i + 3); if (!(key in seen)) { seen[key] = 1; print $i, key, $(i + 1) }
		} }'
}

ibsim_lids() { ibsim_lid_table | awk '{print $3}' | sort -n | paste -sd, -; }
ibsim_switch_lids() { ibsim_lid_table | awk '$1 == "SW" {print $3}' | sort -n | paste -sd, -; }
ibsim_hca_lids() { ibsim_lid_table | awk '$1 == "CA" {print $3}' | sort -n | paste -sd, -; }

ibsim_start() {
	IBSIM_NET=$(readlink -f "$1")
	IBSIM_DIR=$(mktemp -d /tmp/rdmatool-ibsim.XXXXXX)
	trap ibsim_stop EXIT
	mkfifo "$IBSIM_DIR/console"
	# Hold the fifo open read-write so ibsim's console never sees EOF.
	exec 7<>"$IBSIM_DIR/console"
	(cd "$IBSIM_DIR" && exec ibsim -s "$IBSIM_NET" <&7 >ibsim.log 2>&1) &
	IBSIM_PID=$!
	wait_for 100 ibsim_listening || fail "ibsim did not start listening on sim:ctl"
	(cd "$IBSIM_DIR" && OSM_TMP_DIR="$IBSIM_DIR" OSM_CACHE_DIR="$IBSIM_DIR" LD_PRELOAD="$UMAD2SIM" \
		exec opensm -f "$IBSIM_DIR/opensm.log" >opensm.out 2>&1) &
	OPENSM_PID=$!
	wait_for 300 ibsim_all_lids_assigned || fail "opensm did not assign every LID in 30 s"
}

# The LID of HCA $1 (its name in the topology file).
ibsim_hca_lid() {
	SIM_TIMEOUT=10 sim ibnetdiscover -p 2>/dev/null | awk -v n="'$1'" '$1 == "CA" && $(NF - 3) == n { print $2; exit }'
}
