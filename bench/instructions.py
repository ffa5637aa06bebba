#!/usr/bin/env python3
"""Instructions redis-server executes per lock operation, counted by callgrind.

    python3 bench/instructions.py [--lua DIR] [--cycles N] [--cluster] [--masters N] [--publish]

Starts its own redis-server under `valgrind --tool=callgrind`, reached
through a unix socket in a directory of its own (no TCP port: nothing else can
answer in its place), loads the fairlock function library made from DIR
(default: this repository's lua/) by cmake/EmbedLua.cmake, the build's own
joining of the scripts, and prints
the instructions per operation, from the difference of two callgrind dumps
around N cycles (after a warm-up):

  fairlock uncontended pair  acquire (mode f) + release on an idle name
  fairlock contended grant   a holder and 5 queued waiters on one name; a
                             cycle queues a fresh member and releases the
                             holder, which hands its permit to the head
  unfair pair                SET NX PX + an owner-checked DEL script

Each cycle is one pipelined write and its replies. Unlike µs, the counts
barely depend on the machine's speed or load (repetitions agree within 1 to
2 %; the server runs with hz 1, so that its timer adds little per cycle), so
they show changes that the VM's swings hide; they leave out the kernel's cost
per round trip (bench/run.sh measures time). Needs valgrind, redis-server and
cmake (to run cmake/EmbedLua.cmake); takes about 15 s.

--cluster: the server is a Redis Cluster of that one master (cluster-enabled,
every slot its own; its bus and a TCP port for CLUSTER MEET on free loopback
ports, no other node; the script still talks through the unix socket): what
cluster mode adds per operation on the master that owns the name. Members
then wake by SPUBLISH (mode "s"), as the C++ client's do on a cluster.

--masters 3 (any N of 2 or more): a running Redis Cluster of N masters (no
replicas), each under callgrind, formed as tests/harness/redis_cluster.cpp forms one
(SET-CONFIG-EPOCH, ADDSLOTSRANGE of 1/N of the slots each, MEET), members in
mode "s", the library loaded on each, and
64 names (n0 .. n63) each sent to the master of its slot (CLUSTER KEYSLOT).
For the uncontended pair and the contended grant (unfair pair left out):
  every name in turn   each master's share of the grants (its names' share:
                       every name as often) and its instructions per grant
                       it served, timers included
  one master's names   its instructions per grant, and the OTHER masters'
                       per grant: what a grant costs the rest of the
                       cluster; then the same counts over the same wall
                       time with no calls (idle: timers, gossip) and the
                       difference (net)
Takes about 2.5 minutes. Measured on 2 vCPUs (AMD EPYC VM, Redis 7.0.15,
valgrind 3.19, load 2-5 from other work), protocol 8, 1000 cycles (960 for
every name in turn), two runs: 64 names split 22 / 20 / 22 (34 / 31 / 34 %
of the grants); per grant a master served 180,107-180,867 (pair) and
397,849-401,615 (contended grant), against 180,468-180,676 and
390,803-392,267 for --cluster and 167,008-167,515 and 373,721-373,722
standalone in the same runs; over one master's names alone 178,147-178,842
and 394,484-397,125 on it, 251-1,543 on each other master with 248-1,514
idle over the same time: net -138 to +139 per grant, i.e. at most one
second of an idle master's timers and gossip (140,000 to 210,000
instructions) over the 1000 grants, noise of the dumps' timing (hz 1). With
SPUBLISH nothing of a grant reaches the other masters. --publish (members in
mode "p", classic PUBLISH, as before protocol 8) shows the method sees a
cost when there is one: net 1,713-2,337 per contended grant on each other
master (one run), the pair unchanged (it signals nobody). Callgrind counts
user space only; bench/topologies/cluster.cpp measured 10 µs of CPU per PUBLISH on each
other master, most of it, I infer, in the kernel.
"""
import argparse
import glob
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FUNCTIONS = {}  # operation -> the loaded library's function name (set in main)
WAKE = ["p"]  # the members' wake mode (set in main): "s" (sharded) on a cluster, as the C++ client
SLOTS = 16384
WARM_UP = 200  # calls of a cycle before the counting starts
KEY_SUFFIXES = []  # the keys of a name the scripts take, in order (set in main: 7 since protocol version 7)
UNFAIR_RELEASE = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0"


def library(lua_dir):
    """The function library made from lua_dir by cmake/EmbedLua.cmake, and its name."""
    ops = sorted(os.path.basename(f)[:-4] for f in glob.glob(os.path.join(lua_dir, "*.lua")))
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "library.lua")
        subprocess.run(["cmake", "-DLUA_DIR=" + os.path.abspath(lua_dir), "-DOUT=" + os.path.join(tmp, "lua.h"),
                        "-DSCRIPTS=" + ";".join(op for op in ops if op != "lib"), "-DLIBRARY_OUT=" + out,
                        "-P", os.path.join(ROOT, "cmake", "EmbedLua.cmake")], check=True)
        with open(out, encoding="utf-8", newline="") as f:  # byte for byte, as the build embeds it
            text = f.read()
    return text, text.split("\n", 1)[0].split("name=", 1)[1]


class Connection:
    """A minimal RESP2 client: pipelines commands, returns replies (errors raise)."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(120)  # a server that stops answering fails the run, never hangs it
        self.sock.connect(path)
        self.buf = b""

    def pipeline(self, commands):
        out = []
        for c in commands:
            out.append(b"*%d\r\n" % len(c))
            for a in c:
                a = a if isinstance(a, bytes) else str(a).encode()
                out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        self.sock.sendall(b"".join(out))
        return [self._reply() for _ in commands]

    def __call__(self, *command):
        return self.pipeline([command])[0]

    def _fill(self):
        chunk = self.sock.recv(1 << 16)
        if not chunk:
            raise ConnectionError("redis-server closed the connection")
        self.buf += chunk

    def _line(self):
        while b"\r\n" not in self.buf:
            self._fill()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _reply(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            raise RuntimeError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                self._fill()
            value, self.buf = self.buf[:n], self.buf[n + 2:]
            return value.decode(errors="replace")
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self._reply() for _ in range(n)]
        raise RuntimeError("unexpected reply: %r" % line)


class Server:
    """redis-server under callgrind, in a directory of its own."""

    def __init__(self, cluster=False):
        self.dir = tempfile.mkdtemp(prefix="fairlock-instructions.")
        self.out = os.path.join(self.dir, "callgrind.out")
        sock = os.path.join(self.dir, "redis.sock")
        # A cluster node listens on loopback ports too: CLUSTER MEET names a node by its port and bus port.
        self.port, self.bus = (free_port(), free_port()) if cluster else (0, 0)
        cluster_args = ["--cluster-enabled", "yes", "--cluster-port", str(self.bus), "--bind", "127.0.0.1",
                        "--cluster-node-timeout", "60000"]  # no node failed for being slow under callgrind
        self.proc = subprocess.Popen(
            ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + self.out, "--dump-instr=no",
             "redis-server", "--port", str(self.port), "--unixsocket", sock, "--hz", "1", "--save", "",
             "--appendonly", "no", "--dir", self.dir] + (cluster_args if cluster else []),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while True:
            try:
                self.conn = Connection(sock)
                self.conn("PING")
                break
            except (OSError, RuntimeError):
                self.check(deadline, "redis-server did not start under callgrind")

    def check(self, deadline, why):
        """Waits a little; stops the server and raises `why` if it died or the deadline passed."""
        if self.proc.poll() is not None or time.monotonic() > deadline:
            self.stop()
            raise RuntimeError(why)
        time.sleep(0.2)

    def control(self, option):
        done = subprocess.run(["callgrind_control", option, str(self.proc.pid)], capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError("callgrind_control %s failed: %s" % (option, done.stderr.strip() or done.stdout))

    def dump(self):
        """The instructions executed since the last --zero."""
        before = set(glob.glob(self.out + "*"))
        self.control("--dump")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # the dump's last line, "totals:", ends its writing
            for dump in set(glob.glob(self.out + "*")) - before:
                for line in open(dump):
                    if line.startswith("totals:"):
                        return int(line.split()[1])
            time.sleep(0.05)
        raise RuntimeError("callgrind wrote no dump with totals within 30 s")

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def first_slot(j, masters):
    return j * SLOTS // masters


def form_cluster(servers):
    """Master j serves the j-th share of the slots, the first meets the others; waits for cluster_state:ok
    on each (as tests/harness/redis_cluster.cpp, without replicas)."""
    for j, s in enumerate(servers):
        s.conn("CLUSTER", "SET-CONFIG-EPOCH", j + 1)
        s.conn("CLUSTER", "ADDSLOTSRANGE", first_slot(j, len(servers)), first_slot(j + 1, len(servers)) - 1)
    for s in servers[1:]:
        servers[0].conn("CLUSTER", "MEET", "127.0.0.1", s.port, s.bus)
    deadline = time.monotonic() + 120
    for s in servers:
        while "cluster_state:ok" not in s.conn("CLUSTER", "INFO"):
            s.check(deadline, "the cluster did not say cluster_state:ok")


def count(servers, cycle, n):
    """Instructions each server executed over calls WARM_UP .. WARM_UP + n of cycle(i), and their wall time."""
    for i in range(WARM_UP):
        cycle(i)
    for s in servers:
        s.control("--zero")
    start = time.monotonic()
    for i in range(WARM_UP, WARM_UP + n):
        cycle(i)
    elapsed = time.monotonic() - start
    return [s.dump() for s in servers], elapsed


def idle(servers, seconds):
    """Instructions each server executed over `seconds` of no calls: its timers and the cluster's gossip."""
    for s in servers:
        s.control("--zero")
    time.sleep(seconds)
    return [s.dump() for s in servers]


def keys(name):
    base = "fairlock:{%s}:" % name
    return [base + k for k in KEY_SUFFIXES]


def key_suffixes(lib_text):
    """The keys the scripts take: version 7 added ev (lib.lua declares KEYS[7]); 6 before."""
    return ["q", "w", "h", "g", "seq", "o"] + (["ev"] if "KEYS[7]" in lib_text else [])


LEASE_MS = 30000


def member(i):
    # one process (client id), a token per participant, the wait's lease (protocol versions 6 and 7)
    return "%s1a2b3c4d5e6f708:%024x:%d" % (WAKE[0], i, LEASE_MS)


def uncontended_pair(route, names):
    """Cycle i: an idle name of `names` in turn; route(name) is the connection to its server."""
    def cycle(i):
        name = names[i % len(names)]
        k, m = keys(name), member(i)
        replies = route(name).pipeline([["FCALL", FUNCTIONS["acquire"], len(k)] + k + [m, 1, LEASE_MS, 5000, "f"],
                                        ["FCALL", FUNCTIONS["release"], len(k)] + k + [m, 1]])
        if replies != [[1, replies[0][1], LEASE_MS], 1]:
            raise RuntimeError("uncontended pair: %r" % replies)
    return cycle


def contended_grant(route, names):
    """Cycle i: a grant on the busy name of `names` in turn (each a holder and 5 queued waiters)."""
    state = {}  # name -> [holder, its queue, the release's hint]

    def acquire(name, m):
        k = keys(name)
        return route(name)(*(["FCALL", FUNCTIONS["acquire"], len(k)] + k + [m, 1, LEASE_MS, 5000, "f"]))

    for name in names:
        holder = member(10**9)
        if acquire(name, holder)[0] != 1:
            raise RuntimeError("contended grant: the first acquire was not granted")
        queue = [member(10**9 + 1 + j) for j in range(5)]
        for m in queue:
            acquire(name, m)
        state[name] = [holder, queue, []]  # the first holder was granted at once, every later one after queueing

    def cycle(i):
        name = names[i % len(names)]
        k, (holder, queue, queued_first) = keys(name), state[name]
        queue.append(member(i))
        replies = route(name).pipeline(
            [["FCALL", FUNCTIONS["acquire"], len(k)] + k + [queue[-1], 1, LEASE_MS, 5000, "f"],
             ["FCALL", FUNCTIONS["release"], len(k)] + k + [holder, 1] + queued_first])
        if replies[0][0] != 0 or replies[1] != 1:
            raise RuntimeError("contended grant: %r" % replies)
        state[name] = [queue.pop(0), queue, ["h"]]  # as the client says it (release's hint)
    return cycle


def unfair_pair(route, names):
    conn = route(names[0])
    sha = conn("SCRIPT", "LOAD", UNFAIR_RELEASE)

    def cycle(i):
        key, m = "unfair:{%s}" % names[i % len(names)], member(i)
        replies = conn.pipeline([["SET", key, m, "NX", "PX", 30000], ["EVALSHA", sha, 1, key, m]])
        if replies != ["OK", 1]:
            raise RuntimeError("unfair pair: %r" % replies)
    return cycle


def spread(servers, names, cycles):
    """Per master: its share of the grants and instructions per grant over names on every master in turn; then
    per master, over its own names only: its instructions per grant and those of the others (less their idle)."""
    n = len(servers)
    owner = {name: max(j for j in range(n) if first_slot(j, n) <= slot)
             for name, slot in ((name, servers[0].conn("CLUSTER", "KEYSLOT", keys(name)[0])) for name in names)}
    own = [[name for name in names if owner[name] == j] for j in range(n)]

    def route(name):
        return servers[owner[name]].conn

    def others(values, j, per):  # the other masters' values per grant
        return ", ".join("%.0f" % (values[k] / per) for k in range(n) if k != j)

    print("%d names over %d masters: %s" % (len(names), n, " / ".join(str(len(o)) for o in own)), flush=True)
    for label, make in [("fairlock uncontended pair", uncontended_pair),
                        ("fairlock contended grant", contended_grant)]:
        for s in servers:
            s.conn("FLUSHALL")
        rounds = max(1, cycles // len(names))  # every name as often
        totals, _ = count(servers, make(route, names), rounds * len(names))
        print("%s, every name in turn (%d grants):" % (label, rounds * len(names)))
        for j in range(n):
            print("  master %d: %5.1f %% of the grants, %9.0f instructions per grant it served"
                  % (j, 100.0 * len(own[j]) / len(names), totals[j] / (rounds * len(own[j]))))
        print("%s, the names of one master only (%d grants each):" % (label, cycles))
        for j in range(n):
            for s in servers:
                s.conn("FLUSHALL")
            totals, elapsed = count(servers, make(route, own[j]), cycles)
            base = idle(servers, elapsed)
            net = [t - b for t, b in zip(totals, base)]
            print("  master %d: %9.0f per grant; the others %s per grant (idle over the same %.1f s: %s; net %s)"
                  % (j, totals[j] / cycles, others(totals, j, cycles), elapsed, others(base, j, cycles),
                     others(net, j, cycles)), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lua", default=os.path.join(ROOT, "lua"), help="directory of the scripts (default: lua/)")
    ap.add_argument("--cycles", type=int, default=1000, help="cycles counted per figure (default 1000)")
    ap.add_argument("--cluster", action="store_true", help="a one-master Redis Cluster instead of a plain server")
    ap.add_argument("--masters", type=int, default=1, help="a Redis Cluster of that many masters (2 or more)")
    ap.add_argument("--publish", action="store_true", help="on a cluster too, members wake by classic PUBLISH")
    args = ap.parse_args()
    cluster = args.cluster or args.masters > 1
    for tool in ("valgrind", "callgrind_control", "redis-server"):
        if not shutil.which(tool):
            sys.exit("instructions.py: %s is not installed (apt-get install valgrind redis-server)" % tool)
    # A timeout's SIGTERM ends the run through the finally below (server and
    # directory removed), not in the middle of it.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("instructions.py: terminated"))
    servers = []
    try:
        for _ in range(args.masters):
            servers.append(Server(cluster))
        if cluster:
            form_cluster(servers)
            WAKE[0] = "p" if args.publish else "s"
        text, name = library(args.lua)
        for s in servers:
            s.conn("FUNCTION", "LOAD", text)
        FUNCTIONS.update(acquire=name + "_acquire", release=name + "_release")
        KEY_SUFFIXES[:] = key_suffixes(text)
        if args.masters > 1:
            spread(servers, ["n%d" % j for j in range(64)], args.cycles)
            return
        server = servers[0]
        rows = [("fairlock uncontended pair", uncontended_pair, ["idle%d" % j for j in range(64)]),
                ("fairlock contended grant", contended_grant, ["busy"]),
                ("unfair pair", unfair_pair, ["idle%d" % j for j in range(64)])]
        for label, make, names in rows:
            server.conn("FLUSHALL")
            totals, _ = count(servers, make(lambda name: server.conn, names), args.cycles)
            print("%-28s %9.0f instructions" % (label, totals[0] / args.cycles), flush=True)
    finally:
        for s in servers:
            s.stop()


if __name__ == "__main__":
    main()
