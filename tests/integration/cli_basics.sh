#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The dispatcher's contract: --version, --help, exit 2 on bad input, busybox names, devices.
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }

"$RDMATOOL" --version | grep -Eq '^rdmatool [0-9]+\.[0-9]+' || fail "--version"
"$RDMATOOL" --help | grep -q '^Commands:' || fail "--help lists commands"

set +e
out=$("$RDMATOOL" no-such-command 2>&1); rc=$?
set -e
[ $rc -eq 2 ] || fail "unknown command exit $rc, want 2"
echo "$out" | grep -q "unknown command 'no-such-command'" || fail "unknown command message: $out"
echo "$out" | grep -q 'devices' || fail "unknown command lists the commands"

set +e
out=$("$RDMATOOL" --no-such-option 2>&1); rc=$?
set -e
[ $rc -eq 2 ] || fail "unknown global option exit $rc"
echo "$out" | grep -q -- '--no-such-option' || fail "unknown option named: $out"

set +e
out=$("$RDMATOOL" devices --bogus 2>&1); rc=$?
set -e
[ $rc -eq 2 ] || fail "unknown command option exit $rc"
echo "$out" | grep -q -- "--bogus" || fail "bad option named: $out"

set +e
"$RDMATOOL" >/dev/null 2>&1; rc=$?
set -e
[ $rc -eq 2 ] || fail "no command exit $rc, want 2"

"$RDMATOOL" help devices | grep -q 'Usage: rdmatool devices' || fail "help <command>"

# Dispatch on the program's own name.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ln -s "$RDMATOOL" "$tmp/rdmatool-devices"
ln -s "$RDMATOOL" "$tmp/devices"
"$tmp/rdmatool-devices" 2>/dev/null | grep -q '^soft0' || fail "rdmatool-devices link"
"$tmp/devices" 2>/dev/null | grep -q '^soft0' || fail "devices link"

# devices: human and JSON; the soft device is always there.
"$RDMATOOL" devices 2>"$tmp/err" | grep -q 'state: *ACTIVE' || fail "devices shows an ACTIVE port"
"$RDMATOOL" -j devices 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
soft = [x for x in d["devices"] if x["provider"] == "soft"]
assert len(soft) == 1, d
p = soft[0]["ports"][0]
assert p["port"] == 1 and p["state"] == "ACTIVE" and p["active_mtu"] == 4096, p
for k in ("name", "node_guid", "limits", "ports"):
    assert k in soft[0], k
for k in ("physical_state", "lid", "sm_lid", "link_layer", "gids"):
    assert k in p, k
# As ibv_devinfo -v: the GID table entries with their index (for -x); no gid0 key.
assert "gid0" not in p and p["gids"] and p["gids"][0]["index"] == 0, p
assert all(set(g) == {"index", "gid"} and ":" in g["gid"] for g in p["gids"]), p["gids"]
' || fail "devices -j"
"$RDMATOOL" -j -p devices 2>/dev/null | python3 -m json.tool >/dev/null || fail "-j -p is valid JSON"

# soft0's node GUID is the same from run to run (its wire port is not), and differs by address.
guid() { RDMATOOL_SOFT_ADDR=$1 "$RDMATOOL" -j devices 2>/dev/null | python3 -c '
import json, sys
print([x for x in json.load(sys.stdin)["devices"] if x["provider"] == "soft"][0]["node_guid"])'; }
g1=$(guid 127.0.0.1:0) g2=$(guid 127.0.0.1:0) g3=$(guid 127.0.0.2:0)
[ -n "$g1" ] && [ "$g1" = "$g2" ] || fail "soft0 node GUID changes between runs: $g1 $g2"
[ "$g1" != "$g3" ] || fail "soft0 node GUID does not depend on the address: $g1 $g3"

# Output that cannot be written is a failure with a message, never a silent success.
for form in "-j devices" "devices" "--version" "--help" "-q bench write_lat -n 5"; do
	set +e
	"$RDMATOOL" $form >/dev/full 2>"$tmp/err"
	rc=$?
	set -e
	[ $rc -eq 1 ] && grep -q "cannot write to standard output" "$tmp/err" ||
		fail "'rdmatool $form > /dev/full': exit $rc: $(cat "$tmp/err")"
done

# Global options after the command and on the links; a command's own short letters stay its own.
for form in "$tmp/rdmatool-devices -j" "$tmp/rdmatool-devices --json" "$RDMATOOL devices -j" \
	"$tmp/rdmatool-devices --pretty" "$tmp/rdmatool-devices -q -p"; do
	$form 2>/dev/null | python3 -c 'import json, sys; json.load(sys.stdin)' || fail "'$form' is not JSON"
done
"$tmp/rdmatool-devices" --pretty 2>/dev/null | grep -q '^  "devices"' || fail "--pretty on a link does not indent"
"$tmp/rdmatool-devices" -q 2>"$tmp/err" >/dev/null
[ ! -s "$tmp/err" ] || fail "-q after the command still printed: $(cat "$tmp/err")"
ln -s "$RDMATOOL" "$tmp/rdmatool-madstress"
for form in "$RDMATOOL madstress -p 0" "$tmp/rdmatool-madstress --pretty -p 0" "$RDMATOOL -p madstress -p 0"; do
	set +e
	$form -L 1 NodeInfo >/dev/null 2>"$tmp/err"
	rc=$?
	set -e
	[ $rc -eq 2 ] && grep -q -- "-p 0: give 1..64 workers" "$tmp/err" ||
		fail "'$form': -p is not madstress's workers option (exit $rc): $(cat "$tmp/err")"
done
echo ok
