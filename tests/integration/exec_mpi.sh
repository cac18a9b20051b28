#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# rdmatool exec: Open MPI on soft0, two ranks each under its own `rdmatool exec`, a ping-pong
# from 8 B to 4 MiB whose every message is checked (lib/mpi_pingpong.c, built with mpicc):
#   --mca pml ucx with UCX's defaults (soft0 visible must not break them: with rc_verbs
#     needing an SRQ and soft0 hidden from UCX, it used to fail or skip soft0),
#   --mca pml ucx, UCX_TLS=rc_v,self (rc_verbs, ud_verbs only for wireup): the traffic
#     really crosses soft0 (two ranks on one host would otherwise use shared memory),
#   --mca pml cm --mca mtl ofi over libfabric's "verbs;ofi_rxm" (FI_UNIVERSE_SIZE=16: ofi_rxm
#     sizes its CQs by the universe, beyond soft0's 65536 CQEs by default, as on rxe),
#   and the same program over --mca pml ob1 --mca btl self,tcp, whose 8 B latency and 1 MiB
#     bandwidth are printed beside rc_verbs' (a comparison for the record, not asserted).
# Each run is bounded.
# test-timeout: 1000 (four runs of at most 240 s; a sanitizer build doubles both and runs two)
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
for p in mpicc mpirun; do
	command -v "$p" >/dev/null || fail "$p is not installed; run 'make deps' (openmpi-bin, libopenmpi-dev)"
done
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mpicc -O2 -o "$dir/pingpong" "$RDMATOOL_TOP/tests/integration/lib/mpi_pingpong.c" ||
	fail "cannot build mpi_pingpong.c with mpicc"
. "$RDMATOOL_TOP/tests/integration/lib/verbs_pair.sh" # a sanitizer runtime for the preload library
if [ "$(id -u)" = 0 ]; then
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
# Two ranks on a small machine: no binding, oversubscription allowed.
mpi=(mpirun -np 2 --oversubscribe --bind-to none)

# run NAME MPIRUN-ARGS... -- : the ping-pong, each rank under rdmatool exec.
run() {
	local name=$1 rc=0
	shift
	# 240 s, twice that in a sanitizer build (VERBS_PAIR_SLOW): under TSan beside other work the
	# ofi_rxm ranks were still exchanging, 5-50 ms a message, when 240 s ran out.
	timeout -k 10 $((240 * ${VERBS_PAIR_SLOW:-1})) "${mpi[@]}" "$@" "$RDMATOOL" exec -- "$dir/pingpong" 50 >"$dir/$name" 2>&1 || rc=$?
	[ "$rc" = 0 ] || fail "$name: exit $rc: $(tail -40 "$dir/$name")"
	grep -q '^data ok$' "$dir/$name" || fail "$name: the data was not checked ok: $(tail -40 "$dir/$name")"
	grep -Eq '^ +4194304 +[0-9.]+ +[0-9.]+$' "$dir/$name" || fail "$name: no 4 MiB row: $(cat "$dir/$name")"
}
row() { # row NAME SIZE COLUMN: a figure of a run
	awk -v s="$2" -v c="$3" '$1 == s { print $c }' "$dir/$1"
}

# Under TSan (make tsan) Open MPI's pml ucx dies at exit with no library of ours in the
# process (shown with UCX's own shared-memory transports): those two runs are left to the
# other builds, and say so.  exec_ucx.sh still runs UCX over soft0 under TSan.
if [[ ${LD_PRELOAD:-} == *libtsan* ]]; then
	echo "ucx_defaults, ucx_rc: not run under TSan (Open MPI's pml ucx crashes at exit under it)"
else
	run ucx_defaults --mca pml ucx
	run ucx_rc --mca pml ucx -x UCX_TLS=rc_v,self -x UCX_NET_DEVICES=soft0:1
fi
run ofi_rxm --mca pml cm --mca mtl ofi -x FI_PROVIDER="verbs;ofi_rxm" -x FI_UNIVERSE_SIZE=16
run tcp --mca pml ob1 --mca btl self,tcp
for r in ucx_rc ofi_rxm tcp; do
	[ -e "$dir/$r" ] || continue
	echo "$r: 8 B latency $(row "$r" 8 2) us, 1 MiB bandwidth $(row "$r" 1048576 3) MB/s"
done
[ ! -e "$dir/ucx_rc" ] ||
	awk -v u="$(row ucx_rc 8 2)" -v t="$(row tcp 8 2)" 'BEGIN { printf "8 B latency, rc_verbs on soft0 / btl tcp: %.2fx\n", u / t }'
echo "open mpi ok"
