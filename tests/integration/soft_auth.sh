#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The soft wire's authentication between two processes (issue 15 item 7, issue 44 N1 and N13):
#  - with no configuration two processes of the user agree on the user's key and run;
#  - the same RDMATOOL_SOFT_SECRET (or secret file) on both sides works, large payloads both ways;
#  - a different secret, or a secret on one side only, is refused, and the client says why;
#  - an empty secret is an error, not "off";
#  - a stranger (no key) who connects to the server's soft port first and sends a well-formed packet
#    in the client's name neither breaks a real `bench send_lat` nor reads any of it.
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
. "$RDMATOOL_TOP/tests/integration/lib/bench_server.sh"
dir=$(mktemp -d /tmp/rdmatool-soft-auth.XXXXXX)
export RDMATOOL_STATS_DIR=$dir
unset RDMATOOL_SOFT_SECRET RDMATOOL_SOFT_SECRET_FILE
server= stranger=
cleanup() {
	[ -n "$server" ] && kill -9 "$server" 2>/dev/null
	[ -n "$stranger" ] && kill -9 "$stranger" 2>/dev/null
	wait 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT

# run_pair SERVER-ENV CLIENT-ENV [bench test and options]: the client's exit status.  An ENV is a
# space-separated list of VAR=value (or "-" for none) for that side.
run_pair() {
	local rc senv=() cenv=()
	[ "$1" = - ] || read -ra senv <<<"$1"
	[ "$2" = - ] || read -ra cenv <<<"$2"
	bench_server_start "$dir/server.err" env "${senv[@]}" "$RDMATOOL" bench --server=0
	set +e
	env "${cenv[@]}" timeout 120 "$RDMATOOL" bench ${3:-write_lat -n 50} --lock=striped \
		--client="127.0.0.1:$port" >"$dir/client.out" 2>"$dir/client.err"
	rc=$?
	set -e
	kill "$server" 2>/dev/null
	wait "$server" 2>/dev/null || true
	server=
	return $rc
}

# Zero configuration: the user's own key, made on first use.
run_pair - - "send_bw -s 262144 -n 10" || fail "256 KiB SENDs with no configuration: $(cat "$dir/client.err")"
key=${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}/.rdmatool/soft-wire.key
[ "$(stat -c '%a %u' "$key")" = "600 $(id -u)" ] || fail "the user's key $key: $(stat -c '%a %u' "$key")"
[ "$(stat -c '%a' "$(dirname "$key")")" = 700 ] || fail "its directory: $(stat -c '%a' "$(dirname "$key")")"

S=RDMATOOL_SOFT_SECRET
run_pair "$S=same-s3cret" "$S=same-s3cret" || fail "matching secrets: $(cat "$dir/client.err")"
# Payloads past the wire's 64 KiB stranger limit, both ways: WRITE requests and READ responses.
run_pair "$S=same-s3cret" "$S=same-s3cret" "write_bw -s 1048576 -n 10" || fail "1 MiB WRITEs: $(cat "$dir/client.err")"
run_pair "$S=same-s3cret" "$S=same-s3cret" "read_bw -s 1048576 -n 10" || fail "1 MiB READs: $(cat "$dir/client.err")"
printf 'file-s3cret\n' >"$dir/secret"
chmod 600 "$dir/secret"
run_pair "$S=file-s3cret" "${S}_FILE=$dir/secret" || fail "a secret file: $(cat "$dir/client.err")"

if run_pair "$S=s3cret" "$S=another"; then fail "mismatched secrets were served"; fi
grep -q "completed with status" "$dir/client.err" || fail "mismatch: $(cat "$dir/client.err")"
grep -q "refused: it holds a different key" "$dir/client.err" || fail "mismatch, the why: $(cat "$dir/client.err")"
if run_pair "$S=s3cret" -; then fail "a client without the secret was served"; fi
grep -q "refused: it holds a different key" "$dir/client.err" || fail "no secret, the why: $(cat "$dir/client.err")"

# Empty is an error that names the variable, for the secret and for the file.
for v in "$S" "${S}_FILE"; do
	if env "$v=" "$RDMATOOL" bench write_lat -n 5 >"$dir/out" 2>"$dir/err"; then fail "$v= was accepted"; fi
	grep -q "$v is set but empty" "$dir/err" || fail "$v=: $(cat "$dir/err")"
done

# The stranger: no key; it dials the server's soft port as soon as it is up and sends a well-formed SEND
# whose source GID is the client's (GIDs are public: ip and port), then records what it receives.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
sport=$(free_port)
cport=$(free_port)
[ "$sport" != "$cport" ] || cport=$(free_port)
cgid=$(printf 'fe800000000000007f000001%04x5357' "$cport")
cat >"$dir/stranger.py" <<'EOF'
import os, select, socket, struct, sys, time
port, sgid, out, stop = int(sys.argv[1]), bytes.fromhex(sys.argv[2]), sys.argv[3], sys.argv[4]
end = time.time() + 60
open(out + ".ready", "w").close()
while True:
    s = socket.socket()
    try:
        s.connect(("127.0.0.1", port))
        break
    except OSError:
        s.close()
        if time.time() > end:
            sys.exit(3)
        time.sleep(0.001)
# struct soft_wire_hdr: magic, payload; type REQ, opcode SEND, qp_type RC, 5 more bytes; 8 u32; 3 u64; sgid; dgid
hdr = struct.pack("<II8B8I3Q16s16s", 0x53574952, 0, 1, 2, 2, 0, 0, 0, 0, 0,
                  0x123, 0x123456, 0, 0, 0, 0, 0, 0, 0, 0, 0, sgid, bytes(16))
s.sendall(hdr)
got = 0
while time.time() < end and not os.path.exists(stop):
    if select.select([s], [], [], 0.05)[0]:
        try:
            data = s.recv(65536)
        except OSError:
            break
        if not data:
            break
        got += len(data)
with open(out, "w") as f:
    f.write("%d\n" % got)
EOF
python3 "$dir/stranger.py" "$sport" "$cgid" "$dir/stranger.got" "$dir/stop" 2>"$dir/stranger.err" &
stranger=$!
for ((i = 0; i < 400; i++)); do
	[ -e "$dir/stranger.got.ready" ] && break
	sleep 0.05
done
[ -e "$dir/stranger.got.ready" ] || fail "the stranger did not start: $(cat "$dir/stranger.err")"
run_pair "RDMATOOL_SOFT_ADDR=127.0.0.1:$sport" "RDMATOOL_SOFT_ADDR=127.0.0.1:$cport" "send_lat -n 200" ||
	fail "send_lat beside a stranger: $(cat "$dir/client.err")"
touch "$dir/stop"
wait "$stranger" || fail "the stranger never reached the server's soft port (exit $?): $(cat "$dir/stranger.err")"
stranger=
# At most the server's HELLO (56 bytes): no packet of the runs.
[ "$(cat "$dir/stranger.got")" -le 56 ] || fail "the stranger received $(cat "$dir/stranger.got") bytes"
echo "soft auth: ok"
