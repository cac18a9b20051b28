#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# walk --multinode=true: one process per client, updates over TCP, RC pairs
# and RDMA across processes over the soft device's wire.
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }

out=$(timeout 120 "$RDMATOOL" -j walk --clients=3 --duration=4 --multinode=true --seed=2 2>/dev/null) ||
	fail "multinode exit $?: $out"
echo "$out" | jq -e '.result == "pass" and .clients == 3 and .steps > 0' >/dev/null || fail "summary: $out"
# Cross-process pairs came up and carried RDMA.
for a in create_rc_qp_pair read write fetch_add comp_swap send recv create_ud_qp; do
	echo "$out" | jq -e --arg a "$a" '.actions[$a].ok > 0' >/dev/null || fail "$a never succeeded: $out"
done
echo "walk multinode ok"

# N9: twelve connections to the hub that never say a word, opened while the clients start up, do not fail
# the walk (before, the hub gave each 2 s in turn, and the clients behind them missed the 20 s deadline).
# To put them ahead of the clients, the helper shares one CPU with the walk at nice 19 (it polls, so the
# walk barely runs until it is done), stops the client processes (SIGSTOP) as soon as the hub listens,
# connects, and lets the clients go on (SIGCONT) once its connections are in.
dir=$(mktemp -d /tmp/rdmatool-walk-multinode.XXXXXX)
walk=
cleanup() {
	[ -n "$walk" ] && kill -9 "$walk" 2>/dev/null
	wait 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT
cat >"$dir/silent.py" <<'PY'
import os, signal, socket, subprocess, sys, time
n, out, err = int(sys.argv[1]), sys.argv[2], sys.argv[3]
cpus = os.sched_getaffinity(0)
cpu = min(cpus)
os.sched_setaffinity(0, {cpu})
def slow():
    os.nice(19)
walk = subprocess.Popen(sys.argv[4:], stdout=open(out, "w"), stderr=open(err, "w"), preexec_fn=slow)
end = time.time() + 30
def children():
    kids = set()
    for d in os.listdir("/proc"):
        try:
            with open("/proc/%s/stat" % d) as f:
                if int(f.read().rsplit(")", 1)[1].split()[1]) == walk.pid:
                    kids.add(int(d))
        except (OSError, ValueError, IndexError):
            pass
    return kids
def hub_ports():
    inodes, ports = set(), []  # the walk's listening sockets, from its own descriptors
    try:
        for fd in os.listdir("/proc/%d/fd" % walk.pid):
            link = os.readlink("/proc/%d/fd/%s" % (walk.pid, fd))
            if link.startswith("socket:["):
                inodes.add(link[8:-1])
    except OSError:
        pass
    with open("/proc/net/tcp") as f:
        for line in f.readlines()[1:]:
            col = line.split()
            if col[3] == "0A" and col[9] in inodes:
                ports.append(int(col[1].split(":")[1], 16))
    return ports
# The hub forks its clients right after it listens (a device the walk opened before is closed by then):
# stop them as they appear, until the hub's socket is found.
stopped, ports = set(), []
while not ports and time.time() < end and walk.poll() is None:
    for k in children() - stopped:
        os.kill(k, signal.SIGSTOP)
        stopped.add(k)
    if stopped:
        ports = hub_ports()
if len(ports) != 1:
    walk.kill()
    sys.exit(3)
for _ in range(20):  # the last ones
    for k in children() - stopped:
        os.kill(k, signal.SIGSTOP)
        stopped.add(k)
    time.sleep(0.001)
conns = [socket.create_connection(("127.0.0.1", ports[0])) for _ in range(n)]
for k in children() | stopped:
    os.kill(k, signal.SIGCONT)
for k in children() | {walk.pid, 0}:
    try:
        os.sched_setaffinity(k, cpus)
    except OSError:
        pass
sys.exit(walk.wait(timeout=120))
PY
set +e
python3 "$dir/silent.py" 12 "$dir/out" "$dir/err" "$RDMATOOL" -j walk --clients=4 --duration=2 --multinode=true --seed=3
rc=$?
set -e
[ "$rc" -ne 3 ] || fail "the hub never listened: $(cat "$dir/err")"
[ "$rc" -eq 0 ] || fail "walk beside 12 silent connections: exit $rc: $(cat "$dir/out" "$dir/err")"
jq -e '.result == "pass" and .clients == 4' "$dir/out" >/dev/null || fail "summary: $(cat "$dir/out")"
# (when the helper was quicker than the clients, the hub also says it dropped them: "were not walk clients")
echo "walk multinode beside silent connections ok"
