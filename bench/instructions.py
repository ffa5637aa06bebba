#!/usr/bin/env python3
"""Instructions redis-server executes per lock operation, counted by callgrind.

    python3 bench/instructions.py [--lua DIR] [--cycles N] [--cluster]

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
every slot its own; its bus on a free loopback port, no other node): what
cluster mode adds per operation on the master that owns the name. It leaves
out what a PUBLISH costs the other masters (sent over the bus to every node):
bench/cluster.cpp measures that as CPU per grant.
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
        self.proc = subprocess.Popen(
            ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + self.out, "--dump-instr=no",
             "redis-server", "--port", "0", "--unixsocket", sock, "--hz", "1", "--save", "", "--appendonly", "no",
             "--dir", self.dir] + (cluster_args() if cluster else []),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while True:
            try:
                self.conn = Connection(sock)
                self.conn("PING")
                break
            except (OSError, RuntimeError):
                self.check(deadline, "redis-server did not start under callgrind")
        if cluster:
            self.conn("CLUSTER", "ADDSLOTSRANGE", 0, 16383)
            while "cluster_state:ok" not in self.conn("CLUSTER", "INFO"):
                self.check(deadline, "the one-node cluster did not say cluster_state:ok")

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

    def instructions_of(self, cycle, n):
        """Instructions per call of cycle(i), over calls warm-up .. warm-up + n."""
        warm_up = 200
        for i in range(warm_up):
            cycle(i)
        self.control("--zero")
        for i in range(warm_up, warm_up + n):
            cycle(i)
        before = set(glob.glob(self.out + "*"))
        self.control("--dump")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # the dump's last line, "totals:", ends its writing
            for dump in set(glob.glob(self.out + "*")) - before:
                for line in open(dump):
                    if line.startswith("totals:"):
                        return int(line.split()[1]) / n
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


def cluster_args():
    """A cluster-enabled server (plain port 0: clients use the unix socket) with its bus on a free loopback port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        bus = s.getsockname()[1]
    return ["--cluster-enabled", "yes", "--cluster-port", str(bus), "--bind", "127.0.0.1"]


def keys(name):
    base = "fairlock:{%s}:" % name
    return [base + k for k in KEY_SUFFIXES]


def key_suffixes(lib_text):
    """The keys the scripts take: version 7 added ev (lib.lua declares KEYS[7]); 6 before."""
    return ["q", "w", "h", "g", "seq", "o"] + (["ev"] if "KEYS[7]" in lib_text else [])


LEASE_MS = 30000


def member(i):
    # one process (client id), a token per participant, the wait's lease (protocol versions 6 and 7)
    return "p1a2b3c4d5e6f708:%024x:%d" % (i, LEASE_MS)


def uncontended_pair(conn):
    def cycle(i):
        k, m = keys("idle%d" % (i % 64)), member(i)
        replies = conn.pipeline([["FCALL", FUNCTIONS["acquire"], len(k)] + k + [m, 1, LEASE_MS, 5000, "f"],
                                 ["FCALL", FUNCTIONS["release"], len(k)] + k + [m, 1]])
        if replies != [[1, replies[0][1], LEASE_MS], 1]:
            raise RuntimeError("uncontended pair: %r" % replies)
    return cycle


def contended_grant(conn):
    k = keys("busy")
    queue = []

    def acquire(m):
        return conn(*(["FCALL", FUNCTIONS["acquire"], len(k)] + k + [m, 1, LEASE_MS, 5000, "f"]))

    holder = member(10**9)
    if acquire(holder)[0] != 1:
        raise RuntimeError("contended grant: the first acquire was not granted")
    for j in range(5):
        queue.append(member(10**9 + 1 + j))
        acquire(queue[-1])

    queued_first = []  # the first holder was granted at once, every later one after queueing

    def cycle(i):
        nonlocal holder, queued_first
        queue.append(member(i))
        replies = conn.pipeline([["FCALL", FUNCTIONS["acquire"], len(k)] + k + [queue[-1], 1, LEASE_MS, 5000, "f"],
                                 ["FCALL", FUNCTIONS["release"], len(k)] + k + [holder, 1] + queued_first])
        if replies[0][0] != 0 or replies[1] != 1:
            raise RuntimeError("contended grant: %r" % replies)
        holder = queue.pop(0)
        queued_first = ["h"]  # as the client says it (release's hint)
    return cycle


def unfair_pair(conn):
    sha = conn("SCRIPT", "LOAD", UNFAIR_RELEASE)

    def cycle(i):
        key, m = "unfair:{idle%d}" % (i % 64), member(i)
        replies = conn.pipeline([["SET", key, m, "NX", "PX", 30000], ["EVALSHA", sha, 1, key, m]])
        if replies != ["OK", 1]:
            raise RuntimeError("unfair pair: %r" % replies)
    return cycle


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lua", default=os.path.join(ROOT, "lua"), help="directory of the scripts (default: lua/)")
    ap.add_argument("--cycles", type=int, default=1000, help="cycles counted per figure (default 1000)")
    ap.add_argument("--cluster", action="store_true", help="a one-master Redis Cluster instead of a plain server")
    args = ap.parse_args()
    for tool in ("valgrind", "callgrind_control", "redis-server"):
        if not shutil.which(tool):
            sys.exit("instructions.py: %s is not installed (apt-get install valgrind redis-server)" % tool)
    # A timeout's SIGTERM ends the run through the finally below (server and
    # directory removed), not in the middle of it.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("instructions.py: terminated"))
    server = Server(args.cluster)
    try:
        text, name = library(args.lua)
        server.conn("FUNCTION", "LOAD", text)
        FUNCTIONS.update(acquire=name + "_acquire", release=name + "_release")
        KEY_SUFFIXES[:] = key_suffixes(text)
        rows = [("fairlock uncontended pair", uncontended_pair), ("fairlock contended grant", contended_grant),
                ("unfair pair", unfair_pair)]
        for label, make in rows:
            server.conn("FLUSHALL")
            n = server.instructions_of(make(server.conn), args.cycles)
            print("%-28s %9.0f instructions" % (label, n), flush=True)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
