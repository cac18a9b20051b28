#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# rdmatool exec: ibverbs-utils, unmodified, on the soft device.  ibv_devinfo sees soft0
# ACTIVE; ibv_rc_pingpong (plain, 64 KiB with data checked, events, odp-less -N) and
# ibv_ud_pingpong pass as two processes; without -g (no GRH on an Ethernet port) both
# sides fail at once instead of hanging (soft fix 1); the server of ibv_rc_pingpong -e,
# which closes right after its last completion, gets its ACK out (soft fix 2).
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
for p in ibv_devinfo ibv_rc_pingpong ibv_ud_pingpong ss; do
	command -v "$p" >/dev/null || fail "$p is not installed; run 'make deps'"
done
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
. "$RDMATOOL_TOP/tests/integration/lib/verbs_pair.sh"

info=$("$RDMATOOL" exec -- ibv_devinfo -v) || fail "ibv_devinfo: $info"
echo "$info" | grep -q "hca_id:[[:space:]]*soft0" || fail "ibv_devinfo does not list soft0: $info"
echo "$info" | grep -q "state:[[:space:]]*PORT_ACTIVE" || fail "soft0's port is not ACTIVE: $info"
echo "$info" | grep -q "link_layer:[[:space:]]*Ethernet" || fail "soft0's link layer: $info"
echo "$info" | grep -Eq "GID\[  0\]:[[:space:]]*fe80::7f00:1:[0-9a-f]+:5357" || fail "soft0's GID: $info"
# --addr moves the device: the GID names the address.
"$RDMATOOL" exec --addr=127.0.0.3 -- ibv_devinfo -v | grep -q "fe80::7f00:3:" || fail "--addr=127.0.0.3 not in the GID"

verbs_pair_ok rc 60 ibv_rc_pingpong -g 0 -n 200
grep -q "200 iters in" "$dir/rc.client" || fail "rc_pingpong client: $(cat "$dir/rc.client")"
verbs_pair_ok rc_64k_checked 60 ibv_rc_pingpong -g 0 -n 100 -s 65536 -c
verbs_pair_ok rc_odp_flag 60 ibv_rc_pingpong -g 0 -n 100 -N
verbs_pair_ok ud 60 ibv_ud_pingpong -g 0 -n 200 -c
grep -q "200 iters in" "$dir/ud.server" || fail "ud_pingpong server: $(cat "$dir/ud.server")"
# The server of -e closes as soon as its last completion is in: before the NIC drained its
# held ACKs on close, about one run in two ended in "transport retry counter exceeded".
for i in 1 2 3 4 5 6; do
	verbs_pair_ok "rc_events_$i" 60 ibv_rc_pingpong -g 0 -n 100 -e
done

# No GRH on an Ethernet port: modify to RTR fails on both sides, at once (a timeout is 124).
verbs_pair no_grh 30 ibv_rc_pingpong -n 10
[ "$server_rc" != 0 ] && [ "$server_rc" != 124 ] || fail "server without -g: exit $server_rc: $(cat "$dir/no_grh.server")"
[ "$client_rc" != 0 ] && [ "$client_rc" != 124 ] || fail "client without -g: exit $client_rc: $(cat "$dir/no_grh.client")"
grep -q "Failed to modify QP to RTR" "$dir/no_grh.server" "$dir/no_grh.client" ||
	fail "without -g, no RTR failure reported: $(cat "$dir/no_grh.server" "$dir/no_grh.client")"
echo "verbs utils ok"
