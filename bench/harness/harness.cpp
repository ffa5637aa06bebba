#include "harness.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <thread>

#include "child_process.h"
#include "protocol/formats.h"  // src/: the wake channel format
#include "systems.h"

namespace fbench {
namespace {

// ------------------------------------------------------------ worker processes

// Worker pids, for the signal handler: every worker is killed if the driver
// is interrupted.
pid_t g_kids[4096];
int g_nkids = 0;

void register_kid(pid_t p) {
  for (int i = 0; i < g_nkids; ++i) {
    if (g_kids[i] == 0) {
      g_kids[i] = p;
      return;
    }
  }
  if (g_nkids < 4096) g_kids[g_nkids++] = p;
}

void unregister_kid(pid_t p) {
  for (int i = 0; i < g_nkids; ++i) {
    if (g_kids[i] == p) g_kids[i] = 0;
  }
}

void kill_kids() {
  for (int i = 0; i < g_nkids; ++i) {
    if (g_kids[i] > 0) ::kill(g_kids[i], SIGKILL);
  }
}

extern "C" void on_fatal_signal(int sig) {
  kill_kids();
  ::_exit(128 + sig);
}

// One worker process (killed and reaped by the destructor if still running),
// and the file it writes its grant records to.
class Worker {
 public:
  Worker(const std::string& exe, const std::vector<std::string>& args, std::string records)
      : proc_(exe, args), pid_(proc_.pid()), records_(std::move(records)) {
    register_kid(pid_);
  }
  ~Worker() { unregister_kid(pid_); }
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // The next line of its stdout, or "" if none came within `timeout_ms`.
  std::string line(int timeout_ms) { return proc_.line(std::chrono::milliseconds(timeout_ms)).value_or(""); }
  void send(const std::string& line) { proc_.send(line); }
  // Waits up to `timeout_ms` for it to exit, then kills it.
  void reap(int timeout_ms) { proc_.finish(std::chrono::milliseconds(timeout_ms)); }
  const std::string& records() const { return records_; }

 private:
  fairlock::test::Process proc_;
  pid_t pid_;
  std::string records_;
};
using Workers = std::vector<std::unique_ptr<Worker>>;

std::vector<std::string> worker_args(const Env& e, const RunSpec& s, const std::string& name, int proc,
                                     const std::string& rec) {
  const int max_s = s.duration_ms / 1000 + 90;
  std::vector<std::string> args = {"worker"};
  auto opt = [&args](const char* key, std::string value) {
    args.emplace_back(key);
    args.push_back(std::move(value));
  };
  opt("--port", std::to_string(e.port));
  opt("--system", s.system);
  opt("--name", name);
  opt("--threads", std::to_string(s.threads));
  opt("--permits", std::to_string(s.permits));
  opt("--notify", s.notify);
  opt("--proc", std::to_string(proc));
  opt("--hold-us", std::to_string(s.hold_us));
  opt("--liveness-ms", std::to_string(s.liveness_ms));
  opt("--max-s", std::to_string(max_s));
  opt("--out", rec);
  opt("--pool-size", std::to_string(e.pool_size));
  if (s.tls) {
    opt("--tls-port", std::to_string(e.tls_port));
    opt("--cacert", e.cacert);
  }
  return args;
}

void parse_done(const std::string& line, WorkerTotals& t) {
  std::istringstream in(line);
  std::string tok;
  while (in >> tok) {
    auto eq = tok.find('=');
    if (eq == std::string::npos) continue;
    std::string k = tok.substr(0, eq), v = tok.substr(eq + 1);
    long long n = std::atoll(v.c_str());
    if (k == "rt") t.rt += n;
    else if (k == "errors") t.errors += n;
    else if (k == "hb") t.heartbeats += n;
    else if (k == "sig") t.wakes_signal += n;
    else if (k == "ks") t.wakes_keyspace += n;
    else if (k == "timer") t.wakes_timer += n;
    else if (k == "hbw") t.wakes_heartbeat += n;
    else if (k == "err" && v != "-" && t.first_error.empty()) t.first_error = v;
  }
}

// ------------------------------------------------------------ the observer

// Every handoff grant is PUBLISHed by the script that makes it, so the order
// of the messages on the workers' wake channels is the server's grant order.
class Observer {
 public:
  Observer() = default;
  Observer(const Observer&) = delete;  // owns its subscriber thread
  Observer& operator=(const Observer&) = delete;
  ~Observer() { stop(); }
  // Subscribes to the wake channels of `cids`; false if not confirmed in 5 s.
  bool start(const Env& e, const std::vector<std::string>& cids) {
    sub_ = std::make_shared<Redis>(e.host, e.port, 5000);
    for (const auto& cid : cids) sub_->append({"SUBSCRIBE", fairlock::detail::wake_channel("fairlock", cid)});
    sub_->flush();
    std::size_t confirmed = 0;
    const std::int64_t until = now_ns() + 5000 * kMs;
    while (confirmed < cids.size() && now_ns() < until) {
      for (auto& r : sub_->read_available(100)) {
        if (r->type == REDIS_REPLY_ARRAY && r->elements >= 1 && reply_str(r->element[0]) == "subscribe") ++confirmed;
      }
    }
    if (confirmed < cids.size()) return false;
    thread_ = std::thread([this] { listen(); });
    return true;
  }
  void stop() {
    on_.store(false);
    if (thread_.joinable()) thread_.join();
  }
  std::vector<std::uint64_t> fences;  // the granted fences, in server order
  std::string error;

 private:
  void listen() {
    try {
      while (on_.load()) {
        for (auto& r : sub_->read_available(50)) {
          if (r->type != REDIS_REPLY_ARRAY || r->elements < 3 || reply_str(r->element[0]) != "message") continue;
          std::string payload = reply_str(r->element[2]);
          auto sp = payload.find(' ');
          if (sp != std::string::npos) fences.push_back(std::strtoull(payload.c_str() + sp + 1, nullptr, 10));
        }
      }
    } catch (const std::exception& ex) {
      error = ex.what();
    }
  }
  std::atomic<bool> on_{true};
  std::shared_ptr<Redis> sub_;
  std::thread thread_;
};

// ------------------------------------------------------------ one run

struct Run {
  Run(Env& env, const RunSpec& spec) : e(env), s(spec), id(++env.run_counter) { o.spec = spec; }
  Env& e;
  const RunSpec& s;
  int id;
  Measured o;
  Workers kids;
  Observer observer;
  std::int64_t go = 0, stop = 0;

  Measured abort(const std::string& why) {
    e.fail(fmt("run %d (%s W=%d): %s", id, s.system.c_str(), s.W(), why.c_str()));
    observer.stop();
    kids.clear();  // killed and reaped
    return o;
  }
};

// Starts the workers and waits for each one's "ready <mode> <client id>".
bool start_workers(Run& r, std::vector<std::string>& cids) {
  const std::string name = fmt("bench:%s:%d", r.s.system.c_str(), r.id);
  for (int p = 0; p < r.s.procs; ++p) {
    std::string rec = fmt("%s.run%d.%d.rec", r.e.chart_dir.c_str(), r.id, p);
    r.kids.push_back(std::make_unique<Worker>(r.e.exe, worker_args(r.e, r.s, name, p, rec), rec));
  }
  for (auto& k : r.kids) {
    std::string line = k->line(30000);
    if (line.rfind("ready ", 0) != 0) return false;
    std::istringstream in(line.substr(6));
    std::string mode, cid;
    in >> mode >> cid;
    r.o.modes.push_back(mode);
    cids.push_back(cid);
  }
  return true;
}

// Starts every worker at the same instant, for the spec's duration; the
// server's counters over exactly that window.
void run_window(Run& r) {
  ServerSnap a = snapshot(*r.e.admin);
  r.go = now_ns() + 50 * kMs;
  r.stop = r.go + static_cast<std::int64_t>(r.s.duration_ms) * kMs;
  const std::string go_line = fmt("go %lld %lld", static_cast<long long>(r.go), static_cast<long long>(r.stop));
  for (auto& k : r.kids) k->send(go_line);
  sleep_until_ns(r.stop);
  ServerSnap b = snapshot(*r.e.admin);
  r.o.d = delta(a, b);
}

// Each worker's "done ..." line, summed; the first other line if one is not.
bool collect_done(Run& r, std::string& line) {
  for (auto& k : r.kids) {
    line = k->line(45000);
    if (line.rfind("done ", 0) != 0) return false;
    parse_done(line, r.o.tot);
  }
  return true;
}

void count_observed(Run& r) {
  r.observer.stop();
  if (!r.observer.error.empty()) r.e.fail("observer: " + r.observer.error);
  std::uint64_t top = 0;
  for (std::uint64_t f : r.observer.fences) {
    if (f < top) ++r.o.observed_inversions;
    top = std::max(top, f);
  }
  r.o.observed_grants = static_cast<long long>(r.observer.fences.size());
}

// Reaps the workers and reads their grant records; the path that failed, or "".
std::string read_all_records(Run& r, std::vector<Rec>& recs) {
  for (auto& k : r.kids) {
    k->reap(10000);
    if (!read_records(k->records(), recs)) return k->records();
    ::unlink(k->records().c_str());
  }
  return "";
}

void analyse_run(Run& r, const std::vector<Rec>& recs) {
  Measured& o = r.o;
  const RunSpec& s = r.s;
  o.ok = true;
  o.m = analyse(recs, r.go, r.stop, s.permits, r.e.tol_ns, s.system == "fair", s.system == "fair" && s.permits > 1);
  if (o.tot.errors > 0)
    r.e.fail(fmt("run %d (%s W=%d): %lld worker errors, first: %s", r.id, s.system.c_str(), s.W(), o.tot.errors,
                 o.tot.first_error.c_str()));
  if (o.m.grants == 0) r.e.fail(fmt("run %d (%s W=%d): no grants", r.id, s.system.c_str(), s.W()));
  if (o.m.grants > 0) {
    const auto g = static_cast<double>(o.m.grants);
    o.cmds_pg = static_cast<double>(o.d.commands) / g;
    o.cpu_pg = o.d.cpu_us / g;
    o.rt_pg = static_cast<double>(s.system == "fair" ? o.d.top_level : o.tot.rt) / g;
    o.cmd_us_pg = static_cast<double>(client_command_usec(o.d, s.system)) / g;
  }
}

Measured run_workers(Env& e, const RunSpec& s) {
  Run r(e, s);
  std::vector<std::string> cids;
  if (!start_workers(r, cids)) return r.abort("a worker did not start");
  if (s.observe && !r.observer.start(e, cids)) return r.abort("observer could not subscribe");
  run_window(r);
  std::string line;
  if (!collect_done(r, line)) return r.abort("a worker did not finish: " + line);
  count_observed(r);
  std::vector<Rec> recs;
  std::string missing = read_all_records(r, recs);
  if (!missing.empty()) return r.abort("missing records " + missing);
  analyse_run(r, recs);
  return r.o;
}

}  // namespace

void install_signal_handlers() {
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::signal(sig, on_fatal_signal);
  ::signal(SIGPIPE, SIG_IGN);
}

void kill_workers_and_exit(int code) {
  kill_kids();
  std::fflush(stdout);
  std::_Exit(code);
}

Measured measure(Env& e, const RunSpec& s) {
  ServerSnap p0 = snapshot(*e.admin);
  auto pre = ping_us(e, e.pings);
  ServerSnap p1 = snapshot(*e.admin);
  Measured r = run_workers(e, s);
  ServerSnap p2 = snapshot(*e.admin);
  auto post = ping_us(e, e.pings);
  ServerSnap p3 = snapshot(*e.admin);
  pre.insert(pre.end(), post.begin(), post.end());
  r.round_ping_us = median(pre);
  r.rtt_ref_us = e.rtt.p50;
  // Redis CPU per PING (INFO's own cost included), recorded as raw data.
  r.cpu_per_ping_us = ((p1.cpu_s - p0.cpu_s) + (p3.cpu_s - p2.cpu_s)) * 1e6 / (2.0 * e.pings);
  say(fmt("  %-6s %-8s W=%-3d (%dx%d) permits=%d: %6lld grants, %7.0f/s, handoff p50 %s us, PING %.0f us%s\n",
          s.system.c_str(), s.system == "fair" ? s.notify.c_str() : "", s.W(), s.procs, s.threads, s.permits,
          r.m.grants, r.m.grants_per_s, num(r.m.handoff_p50_us, 0).c_str(), r.round_ping_us, r.ok ? "" : "  (FAILED)"));
  return r;
}

}  // namespace fbench
