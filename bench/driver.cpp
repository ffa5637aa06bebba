// The benchmark driver. See bench/README.md for what each scenario measures
// and how; bench/run.sh is the one command that builds, starts a
// redis-server and calls `fairlock_bench run`.
#include "driver.h"

#include <fairlock/fairlock.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <poll.h>
#include <signal.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <thread>

#include "analysis.h"
#include "common.h"
#include "systems.h"
#include "worker.h"

namespace fbench {
namespace {

constexpr std::int64_t kMs = 1000000;

// ------------------------------------------------------------ child processes

// Worker pids, for the signal handler: every worker is killed if the driver
// is interrupted. Workers also die with the driver (PR_SET_PDEATHSIG) and by
// their own alarm().
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

extern "C" void on_fatal_signal(int sig) {
  for (int i = 0; i < g_nkids; ++i) {
    if (g_kids[i] > 0) ::kill(g_kids[i], SIGKILL);
  }
  ::_exit(128 + sig);
}

struct Child {
  pid_t pid = -1;
  int to = -1;    // its stdin
  int from = -1;  // its stdout
  std::string buf;
  std::string records;
};

Child spawn(const std::string& exe, const std::vector<std::string>& args) {
  int in[2], out[2];
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(exe.c_str()));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    ::execv(exe.c_str(), argv.data());
    ::_exit(127);
  }
  register_kid(pid);
  ::close(in[0]);
  ::close(out[1]);
  Child c;
  c.pid = pid;
  c.to = in[1];
  c.from = out[0];
  return c;
}

bool read_line(Child& c, std::string& line, int timeout_ms) {
  const std::int64_t end = now_ns() + static_cast<std::int64_t>(timeout_ms) * kMs;
  for (;;) {
    auto nl = c.buf.find('\n');
    if (nl != std::string::npos) {
      line = c.buf.substr(0, nl);
      c.buf.erase(0, nl + 1);
      return true;
    }
    std::int64_t left = (end - now_ns()) / kMs;
    if (left <= 0) return false;
    pollfd p{c.from, POLLIN, 0};
    int n = ::poll(&p, 1, static_cast<int>(left));
    if (n <= 0) continue;
    char tmp[512];
    ssize_t got = ::read(c.from, tmp, sizeof tmp);
    if (got <= 0) return false;
    c.buf.append(tmp, static_cast<std::size_t>(got));
  }
}

void write_all(int fd, const std::string& s) {
  std::size_t off = 0;
  while (off < s.size()) {
    ssize_t n = ::write(fd, s.data() + off, s.size() - off);
    if (n <= 0) return;
    off += static_cast<std::size_t>(n);
  }
}

// Waits up to timeout_ms for the child to exit, then kills it.
void reap(Child& c, int timeout_ms) {
  if (c.pid <= 0) return;
  const std::int64_t end = now_ns() + static_cast<std::int64_t>(timeout_ms) * kMs;
  int status = 0;
  for (;;) {
    pid_t r = ::waitpid(c.pid, &status, WNOHANG);
    if (r == c.pid || r < 0) break;
    if (now_ns() >= end) {
      ::kill(c.pid, SIGKILL);
      ::waitpid(c.pid, &status, 0);
      break;
    }
    sleep_ns(5 * kMs);
  }
  unregister_kid(c.pid);
  c.pid = -1;
  if (c.to >= 0) ::close(c.to);
  if (c.from >= 0) ::close(c.from);
  c.to = c.from = -1;
}

// ------------------------------------------------------------ environment

struct Target {
  std::string id, goal, measured;
  bool met = false;
  std::string note;
};

// Progress on stdout, flushed: the driver runs for minutes.
void say(const std::string& s) {
  std::printf("%s", s.c_str());
  std::fflush(stdout);
}

struct Env {
  std::string host = "127.0.0.1";
  int port = 0;
  bool smoke = false;
  std::string exe, json_path, md_path, chart_dir, micro_json, git_rev;
  std::set<char> only;
  std::vector<int> ws;  // --ws: restrict B's participant counts (development)
  int pool_size = 0;    // --pool-size: the workers' connection pool (development; 0 = library default)
  std::int64_t tol_ns = 2 * kMs;
  std::unique_ptr<Redis> admin;   // INFO, CONFIG, FLUSHALL
  std::unique_ptr<Redis> pinger;  // the RTT unit: PING on its own connection
  Json out = Json::object();
  std::string md;
  std::vector<std::string> broken;  // the benchmark itself failed somewhere
  std::vector<Target> targets;
  int run_counter = 0;
  std::map<std::string, std::string> dat;  // chart data files
  int pings = 300;

  bool wants(char s) const { return only.empty() || only.count(s) > 0; }
  std::string url() const { return "redis://" + host + ":" + std::to_string(port); }
  void fail(const std::string& what) {
    std::fprintf(stderr, "BENCHMARK ERROR: %s\n", what.c_str());
    broken.push_back(what);
  }
  void target(std::string id, std::string goal, std::string measured, bool met, std::string note = "") {
    targets.push_back({std::move(id), std::move(goal), std::move(measured), met, std::move(note)});
  }
};

std::vector<double> ping_us(Env& e, int n) {
  std::vector<double> v;
  v.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    std::int64_t t0 = now_ns();
    Reply r = e.pinger->cmd({"PING"});
    std::int64_t t1 = now_ns();
    if (reply_str(r.get()) != "PONG") throw std::runtime_error("PING: " + reply_text(r.get()));
    v.push_back(static_cast<double>(t1 - t0) / 1e3);
  }
  return v;
}

void flushall(Env& e) {
  e.admin->cmd({"FLUSHALL"});
  load_fairlock_scripts(*e.admin);
}

std::string num(double v, int prec = 1) {
  if (std::isnan(v)) return "n/a";
  return fmt("%.*f", prec, v);
}

std::string thousands(double v) {
  if (std::isnan(v)) return "n/a";
  if (v >= 100) return fmt("%.0f", v);
  if (v >= 10) return fmt("%.1f", v);
  return fmt("%.2f", v);
}

// ------------------------------------------------------------ contended runs

struct RunSpec {
  std::string system = "fair";  // fair | unfair | zset
  int procs = 1, threads = 1, permits = 1;
  std::string notify = "publish";
  int duration_ms = 3000;
  int hold_us = 0;
  int liveness_ms = 5000;
  bool observe = false;  // subscribe to the workers' wake channels: the server's grant order
  int W() const { return procs * threads; }
};

struct Measured {
  RunSpec spec;
  bool ok = false;
  Metrics m;
  ServerDelta d;
  WorkerTotals tot;
  double rtt_us = NAN;  // median PING RTT measured right before and after the run
  double cmds_pg = NAN, cpu_pg = NAN, rt_pg = NAN;
  double script_us_pg = NAN;     // Redis's own EVALSHA time per grant
  double cpu_per_ping_us = NAN;  // Redis CPU per PING around the run (raw data; an idle server's PING cost
                                 // swings with VM wake-up costs, so it is no unit for CPU per grant)
  std::vector<std::string> modes;
  long long observed_grants = 0;      // handoff grants seen on the wake channels, in server order
  long long observed_inversions = 0;  // ... with a fence below an earlier one (out of ticket order)
};

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

Measured run_workers(Env& e, const RunSpec& s) {
  Measured o;
  o.spec = s;
  const int id = ++e.run_counter;
  const std::string name = fmt("bench:%s:%d", s.system.c_str(), id);
  std::vector<Child> kids;
  std::vector<Rec> recs;
  auto abort_run = [&](const std::string& why) {
    e.fail(fmt("run %d (%s W=%d): %s", id, s.system.c_str(), s.W(), why.c_str()));
    for (auto& k : kids) reap(k, 0);
    return o;
  };
  const int max_s = s.duration_ms / 1000 + 90;
  for (int p = 0; p < s.procs; ++p) {
    std::string rec = fmt("%s.run%d.%d.rec", e.chart_dir.c_str(), id, p);
    std::vector<std::string> args = {"worker",
                                     "--port",
                                     std::to_string(e.port),
                                     "--system",
                                     s.system,
                                     "--name",
                                     name,
                                     "--threads",
                                     std::to_string(s.threads),
                                     "--permits",
                                     std::to_string(s.permits),
                                     "--notify",
                                     s.notify,
                                     "--proc",
                                     std::to_string(p),
                                     "--hold-us",
                                     std::to_string(s.hold_us),
                                     "--liveness-ms",
                                     std::to_string(s.liveness_ms),
                                     "--max-s",
                                     std::to_string(max_s),
                                     "--out",
                                     rec,
                                     "--pool-size",
                                     std::to_string(e.pool_size)};
    kids.push_back(spawn(e.exe, args));
    kids.back().records = rec;
  }
  std::string line;
  std::vector<std::string> cids;
  for (auto& k : kids) {
    if (!read_line(k, line, 30000) || line.rfind("ready ", 0) != 0) return abort_run("a worker did not start");
    std::istringstream in(line.substr(6));
    std::string mode, cid;
    in >> mode >> cid;
    o.modes.push_back(mode);
    cids.push_back(cid);
  }
  // The observer: every handoff grant is PUBLISHed by the script that makes
  // it, so the order of the messages is the server's grant order.
  std::atomic<bool> observing{true};
  std::vector<std::uint64_t> observed;
  std::string observer_error;
  std::thread observer;
  if (s.observe) {
    auto sub = std::make_shared<Redis>(e.host, e.port, 5000);
    for (const auto& cid : cids) sub->append({"SUBSCRIBE", "fairlock:wake:" + cid});
    sub->flush();
    std::size_t confirmed = 0;
    const std::int64_t until = now_ns() + 5000 * kMs;
    while (confirmed < cids.size() && now_ns() < until) {
      for (auto& r : sub->read_available(100)) {
        if (r->type == REDIS_REPLY_ARRAY && r->elements >= 1 && reply_str(r->element[0]) == "subscribe") ++confirmed;
      }
    }
    if (confirmed < cids.size()) return abort_run("observer could not subscribe");
    observer = std::thread([&observing, &observed, &observer_error, sub] {
      try {
        while (observing.load()) {
          for (auto& r : sub->read_available(50)) {
            if (r->type != REDIS_REPLY_ARRAY || r->elements < 3 || reply_str(r->element[0]) != "message") continue;
            std::string payload = reply_str(r->element[2]);
            auto sp = payload.find(' ');
            if (sp != std::string::npos) observed.push_back(std::strtoull(payload.c_str() + sp + 1, nullptr, 10));
          }
        }
      } catch (const std::exception& ex) {
        observer_error = ex.what();
      }
    });
  }
  auto stop_observer = [&] {
    observing.store(false);
    if (observer.joinable()) observer.join();
  };
  struct Guard {
    std::function<void()> f;
    explicit Guard(std::function<void()> fn) : f(std::move(fn)) {}
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;
    ~Guard() { f(); }
  } guard{stop_observer};  // joined on every way out, exceptions included
  ServerSnap a = snapshot(*e.admin);
  const std::int64_t go = now_ns() + 50 * kMs;
  const std::int64_t stop = go + static_cast<std::int64_t>(s.duration_ms) * kMs;
  const std::string go_line = fmt("go %lld %lld\n", static_cast<long long>(go), static_cast<long long>(stop));
  for (auto& k : kids) write_all(k.to, go_line);
  sleep_until_ns(stop);
  ServerSnap b = snapshot(*e.admin);
  o.d = delta(a, b);
  for (auto& k : kids) {
    if (!read_line(k, line, 45000) || line.rfind("done ", 0) != 0) {
      stop_observer();
      return abort_run("a worker did not finish: " + line);
    }
    parse_done(line, o.tot);
  }
  stop_observer();
  if (!observer_error.empty()) e.fail("observer: " + observer_error);
  std::uint64_t top = 0;
  for (std::uint64_t f : observed) {
    if (f < top) ++o.observed_inversions;
    top = std::max(top, f);
  }
  o.observed_grants = static_cast<long long>(observed.size());
  for (auto& k : kids) {
    reap(k, 10000);
    if (!read_records(k.records, recs)) return abort_run("missing records " + k.records);
    ::unlink(k.records.c_str());
  }
  o.ok = true;
  o.m = analyse(recs, go, stop, s.permits, e.tol_ns, s.system == "fair", s.system == "fair" && s.permits > 1);
  if (o.tot.errors > 0)
    e.fail(fmt("run %d (%s W=%d): %lld worker errors, first: %s", id, s.system.c_str(), s.W(), o.tot.errors,
               o.tot.first_error.c_str()));
  if (o.m.grants == 0) e.fail(fmt("run %d (%s W=%d): no grants", id, s.system.c_str(), s.W()));
  if (o.m.grants > 0) {
    const auto g = static_cast<double>(o.m.grants);
    o.cmds_pg = static_cast<double>(o.d.commands) / g;
    o.cpu_pg = o.d.cpu_us / g;
    o.rt_pg = static_cast<double>(s.system == "fair" ? o.d.top_level : o.tot.rt) / g;
    o.script_us_pg = static_cast<double>(o.d.evalsha_usec) / g;
  }
  return o;
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
  r.rtt_us = median(pre);
  // Redis CPU per PING (INFO's own cost included), recorded as raw data.
  r.cpu_per_ping_us = ((p1.cpu_s - p0.cpu_s) + (p3.cpu_s - p2.cpu_s)) * 1e6 / (2.0 * e.pings);
  say(fmt("  %-6s %-8s W=%-3d (%dx%d) permits=%d: %6lld grants, %7.0f/s, handoff p50 %s us, RTT %.0f us%s\n",
          s.system.c_str(), s.system == "fair" ? s.notify.c_str() : "", s.W(), s.procs, s.threads, s.permits,
          r.m.grants, r.m.grants_per_s, num(r.m.handoff_p50_us, 0).c_str(), r.rtt_us, r.ok ? "" : "  (FAILED)"));
  return r;
}

Json metrics_json(const Measured& r, bool with_commands) {
  Json j = Json::object();
  j["system"] = r.spec.system;
  j["notify"] = r.spec.notify;
  j["W"] = r.spec.W();
  j["processes"] = r.spec.procs;
  j["threads_per_process"] = r.spec.threads;
  j["permits"] = r.spec.permits;
  j["ok"] = r.ok;
  j["window_s"] = r.m.window_s;
  j["rtt_us"] = r.rtt_us;
  j["grants"] = r.m.grants;
  j["grants_per_s"] = r.m.grants_per_s;
  j["other_participant_grants"] = r.m.cross;
  j["other_participant_grants_per_s"] = r.m.cross_per_s;
  j["handoffs"] = r.m.handoffs;
  j["handoff_p50_us"] = r.m.handoff_p50_us;
  j["handoff_p99_us"] = r.m.handoff_p99_us;
  j["handoff_p50_rtt"] = r.m.handoff_p50_us / r.rtt_us;
  j["handoff_p99_rtt"] = r.m.handoff_p99_us / r.rtt_us;
  j["overtakes"] = r.m.overtakes;
  j["overtakes_per_100"] = r.m.overtakes_per_100;
  j["overtakes_strict_per_100"] = r.m.overtakes_strict_per_100;
  j["self_regrabs"] = r.m.regrabs;
  j["self_regrab_pct"] = r.m.regrab_pct;
  j["self_regrabs_while_others_wait"] = r.m.regrabs_waiting;
  j["self_regrab_while_others_wait_pct"] = r.m.regrab_waiting_pct;
  j["wait_p50_ms"] = r.m.wait_p50_ms;
  j["wait_p99_ms"] = r.m.wait_p99_ms;
  j["wait_max_ms"] = r.m.wait_max_ms;
  j["max_holders"] = r.m.max_holders;
  j["fence_inversions"] = r.m.fence_inversions;
  j["pending_at_stop"] = r.m.pending_at_stop;
  j["redis_commands"] = r.d.commands;
  j["redis_top_level_commands"] = r.d.top_level;
  j["redis_cpu_us"] = r.d.cpu_us;
  j["commands_per_grant"] = r.cmds_pg;
  j["redis_cpu_us_per_grant"] = r.cpu_pg;
  j["round_trips_per_grant"] = r.rt_pg;
  j["script_us_per_grant"] = r.script_us_pg;
  j["redis_cpu_us_per_ping"] = r.cpu_per_ping_us;
  j["overtake_margin_max_ms"] = r.m.overtake_margin_max_ms;
  if (r.spec.system == "fair") {
    j["overtakes_overtaken_reached_redis_later"] = r.m.overtakes_later_arrival;
    j["overtakes_fifo_violations"] = r.m.overtakes_fifo_violation;
    j["overtakes_unclassified"] = r.m.overtakes_unclassified;
    j["arrival_delay_p50_ms"] = r.m.arrival_delay_p50_ms;
    j["arrival_delay_p99_ms"] = r.m.arrival_delay_p99_ms;
    j["arrival_delay_max_ms"] = r.m.arrival_delay_max_ms;
  }
  j["client_round_trips"] = r.tot.rt;
  j["heartbeats"] = r.tot.heartbeats;
  j["wakes_signal"] = r.tot.wakes_signal;
  j["wakes_keyspace"] = r.tot.wakes_keyspace;
  j["wakes_timer"] = r.tot.wakes_timer;
  j["wakes_heartbeat"] = r.tot.wakes_heartbeat;
  j["worker_errors"] = r.tot.errors;
  if (r.spec.observe) {
    j["observed_handoff_grants"] = r.observed_grants;
    j["observed_out_of_ticket_order"] = r.observed_inversions;
  }
  if (with_commands) {
    Json c = Json::object();
    for (const auto& [k, v] : r.d.per_command) c[k] = v;
    j["commands"] = c;
  }
  return j;
}

// Medians (or pooled counts) over the rounds of one configuration.
struct Summary {
  int runs = 0;
  double rtt_us = NAN, grants_per_s = NAN, cross_per_s = NAN, p50_us = NAN, p99_us = NAN, p50_rtt = NAN, p99_rtt = NAN,
         wait_p99_ms = NAN, wait_max_ms = 0, cmds_pg = NAN, cpu_pg = NAN, rt_pg = NAN;
  long long grants = 0, overtakes = 0, strict_overtakes = 0, regrabs = 0, regrabs_waiting = 0, inversions = 0;
  double overtakes_per_100 = 0, strict_per_100 = 0, regrab_pct = 0, regrab_waiting_pct = 0;
  int max_holders = 0;
  double script_us_pg = NAN, margin_max_ms = 0, arrival_p99_ms = NAN, arrival_max_ms = 0;
  long long later_arrival = 0, fifo_violations = 0, unclassified = 0;
  double wakes_signal_pg = NAN, wakes_keyspace_pg = NAN, wakes_timer_pg = NAN, wakes_heartbeat_pg = NAN;
};

Summary summarise(const std::vector<Measured>& runs) {
  Summary s;
  std::vector<double> rtt, gps, cps, p50, p99, p50r, p99r, w99, cmds, cpu, rt, ws, wk, wt, wh, scr, arr;
  long long strict = 0, gm1 = 0;
  for (const auto& r : runs) {
    if (!r.ok || r.m.grants == 0) continue;
    ++s.runs;
    rtt.push_back(r.rtt_us);
    gps.push_back(r.m.grants_per_s);
    cps.push_back(r.m.cross_per_s);
    if (!std::isnan(r.m.handoff_p50_us)) {
      p50.push_back(r.m.handoff_p50_us);
      p99.push_back(r.m.handoff_p99_us);
      p50r.push_back(r.m.handoff_p50_us / r.rtt_us);
      p99r.push_back(r.m.handoff_p99_us / r.rtt_us);
    }
    w99.push_back(r.m.wait_p99_ms);
    s.wait_max_ms = std::max(s.wait_max_ms, r.m.wait_max_ms);
    cmds.push_back(r.cmds_pg);
    cpu.push_back(r.cpu_pg);
    rt.push_back(r.rt_pg);
    scr.push_back(r.script_us_pg);
    arr.push_back(r.m.arrival_delay_p99_ms);
    s.arrival_max_ms = std::max(s.arrival_max_ms, r.m.arrival_delay_max_ms);
    s.margin_max_ms = std::max(s.margin_max_ms, r.m.overtake_margin_max_ms);
    s.later_arrival += r.m.overtakes_later_arrival;
    s.fifo_violations += r.m.overtakes_fifo_violation;
    s.unclassified += r.m.overtakes_unclassified;
    s.grants += r.m.grants;
    gm1 += std::max(0LL, r.m.grants - 1);
    s.overtakes += r.m.overtakes;
    strict +=
        static_cast<long long>(std::llround(r.m.overtakes_strict_per_100 * static_cast<double>(r.m.grants) / 100));
    s.regrabs += r.m.regrabs;
    s.regrabs_waiting += r.m.regrabs_waiting;
    s.inversions += r.m.fence_inversions;
    s.max_holders = std::max(s.max_holders, r.m.max_holders);
    const auto g = static_cast<double>(r.m.grants);
    ws.push_back(static_cast<double>(r.tot.wakes_signal) / g);
    wk.push_back(static_cast<double>(r.tot.wakes_keyspace) / g);
    wt.push_back(static_cast<double>(r.tot.wakes_timer) / g);
    wh.push_back(static_cast<double>(r.tot.wakes_heartbeat) / g);
  }
  s.strict_overtakes = strict;
  s.rtt_us = median(rtt);
  s.grants_per_s = median(gps);
  s.cross_per_s = median(cps);
  s.p50_us = median(p50);
  s.p99_us = median(p99);
  s.p50_rtt = median(p50r);
  s.p99_rtt = median(p99r);
  s.wait_p99_ms = median(w99);
  s.cmds_pg = median(cmds);
  s.cpu_pg = median(cpu);
  s.rt_pg = median(rt);
  s.script_us_pg = median(scr);
  s.arrival_p99_ms = median(arr);
  s.wakes_signal_pg = median(ws);
  s.wakes_keyspace_pg = median(wk);
  s.wakes_timer_pg = median(wt);
  s.wakes_heartbeat_pg = median(wh);
  if (s.grants > 0) {
    s.overtakes_per_100 = 100.0 * static_cast<double>(s.overtakes) / static_cast<double>(s.grants);
    s.strict_per_100 = 100.0 * static_cast<double>(strict) / static_cast<double>(s.grants);
  }
  if (gm1 > 0) {
    s.regrab_pct = 100.0 * static_cast<double>(s.regrabs) / static_cast<double>(gm1);
    s.regrab_waiting_pct = 100.0 * static_cast<double>(s.regrabs_waiting) / static_cast<double>(gm1);
  }
  return s;
}

Json summary_json(const Summary& s) {
  Json j = Json::object();
  j["rounds"] = s.runs;
  j["rtt_us"] = s.rtt_us;
  j["grants"] = s.grants;
  j["grants_per_s"] = s.grants_per_s;
  j["other_participant_grants_per_s"] = s.cross_per_s;
  j["handoff_p50_us"] = s.p50_us;
  j["handoff_p99_us"] = s.p99_us;
  j["handoff_p50_rtt"] = s.p50_rtt;
  j["handoff_p99_rtt"] = s.p99_rtt;
  j["overtakes"] = s.overtakes;
  j["overtakes_per_100"] = s.overtakes_per_100;
  j["overtakes_strict"] = s.strict_overtakes;
  j["overtakes_strict_per_100"] = s.strict_per_100;
  j["self_regrab_pct"] = s.regrab_pct;
  j["self_regrabs_while_others_wait"] = s.regrabs_waiting;
  j["self_regrab_while_others_wait_pct"] = s.regrab_waiting_pct;
  j["fence_inversions"] = s.inversions;
  j["wait_p99_ms"] = s.wait_p99_ms;
  j["wait_max_ms"] = s.wait_max_ms;
  j["max_holders"] = s.max_holders;
  j["commands_per_grant"] = s.cmds_pg;
  j["redis_cpu_us_per_grant"] = s.cpu_pg;
  j["round_trips_per_grant"] = s.rt_pg;
  j["script_us_per_grant"] = s.script_us_pg;
  j["overtake_margin_max_ms"] = s.margin_max_ms;
  j["overtakes_overtaken_reached_redis_later"] = s.later_arrival;
  j["overtakes_fifo_violations"] = s.fifo_violations;
  j["overtakes_unclassified"] = s.unclassified;
  j["arrival_delay_p99_ms"] = s.arrival_p99_ms;
  j["arrival_delay_max_ms"] = s.arrival_max_ms;
  j["wakes_signal_per_grant"] = s.wakes_signal_pg;
  j["wakes_keyspace_per_grant"] = s.wakes_keyspace_pg;
  j["wakes_timer_per_grant"] = s.wakes_timer_pg;
  j["wakes_heartbeat_per_grant"] = s.wakes_heartbeat_pg;
  return j;
}

std::string lat_cell(double us, double ratio) {
  if (std::isnan(us)) return "n/a";
  if (us >= 10000) return fmt("%.1f ms (%.0f×)", us / 1000, ratio);
  return fmt("%.0f µs (%.1f×)", us, ratio);
}

struct Layout {
  int procs, threads;
};
Layout layout(int W) {
  if (W <= 16) return {W, 1};      // one process per participant
  if (W <= 64) return {4, W / 4};  // threads inside a few processes
  return {8, W / 8};
}

// ------------------------------------------------------------ A: uncontended

void scenario_A(Env& e) {
  say("\n== A. Uncontended: one client, acquire+release pairs, sequential\n");
  flushall(e);
  const int blocks = e.smoke ? 3 : 15;
  const int n = e.smoke ? 50 : 200;
  fairlock::Options o;
  o.url = e.url();
  fairlock::Client client(o);
  fairlock::FairLock lock(client, "bench:A:fair");
  Redis conn(e.host, e.port);
  const std::string sha = load_unlock_script(conn);
  RawKeys raw("fairlock", "bench:A:raw");
  std::uint64_t member_n = 0;

  struct Sys {
    std::string key, label;
    std::vector<double> all_us, block_med, ratios;
    long long ops = 0, cmds = 0, top = 0, client_rt = 0, script_usec = 0;
    double cpu_us = 0;
  };
  std::vector<Sys> sys = {
      {"ping", "PING (the RTT unit)", {}, {}, {}, 0, 0, 0, 0, 0, 0},
      {"fairlock", "fairlock FairLock lock()+unlock()", {}, {}, {}, 0, 0, 0, 0, 0, 0},
      {"fairlock_scripts", "fairlock scripts only (raw EVALSHA acquire+release)", {}, {}, {}, 0, 0, 0, 0, 0, 0},
      {"unfair", "unfair SET NX PX + Lua DEL", {}, {}, {}, 0, 0, 0, 0, 0, 0},
      {"zset", "sorted-set polling queue", {}, {}, {}, 0, 0, 0, 0, 0, 0}};
  auto one = [&](std::size_t i) -> double {
    std::int64_t t0 = now_ns();
    RtCounter rt;
    switch (i) {
      case 0: {
        Reply r = e.pinger->cmd({"PING"});
        rt.hit();
        break;
      }
      case 1:
        lock.lock();
        lock.unlock();
        break;
      case 2: {
        std::string m = fake_member('n', 0xa11ceULL, ++member_n);
        Reply a = conn.cmd(raw_acquire_argv(raw, m, 1, 10000, 5000, 'q'));
        if (a->type != REDIS_REPLY_ARRAY || reply_int(a->element[0]) != 1) {
          throw std::runtime_error("raw acquire: " + reply_text(a.get()));
        }
        Reply r = conn.cmd(raw_release_argv(raw, m, 1));
        if (reply_int(r.get()) != 1) throw std::runtime_error("raw release: " + reply_text(r.get()));
        rt.n += 2;
        break;
      }
      case 3: {
        std::string tok = "a" + std::to_string(++member_n);
        const std::int64_t give_up = now_ns() + 10000 * kMs;  // uncontended: never reached
        if (!unfair_lock(
                conn, "bench:A:unfair", tok, [&] { return now_ns() > give_up; }, rt)) {
          throw std::runtime_error("unfair lock not granted within 10 s");
        }
        unfair_unlock(conn, sha, "bench:A:unfair", tok, rt);
        break;
      }
      case 4: {
        std::string tok = "z" + std::to_string(++member_n);
        const std::int64_t give_up = now_ns() + 10000 * kMs;
        if (!zset_lock(
                conn, "bench:A:zq", "bench:A:zlock", tok, [&] { return now_ns() > give_up; }, rt)) {
          throw std::runtime_error("sorted-set queue lock not granted within 10 s");
        }
        zset_unlock(conn, sha, "bench:A:zlock", tok, rt);
        break;
      }
    }
    sys[i].client_rt += rt.n;
    return static_cast<double>(now_ns() - t0) / 1e3;
  };
  for (int b = 0; b < blocks; ++b) {
    std::vector<double> med(sys.size(), NAN);
    for (std::size_t k = 0; k < sys.size(); ++k) {
      std::size_t i = (k + static_cast<std::size_t>(b)) % sys.size();  // rotate the order every block
      const int count = i == 4 ? n / 2 : n;
      ServerSnap s0 = snapshot(*e.admin);
      std::vector<double> v;
      v.reserve(static_cast<std::size_t>(count));
      for (int j = 0; j < count; ++j) v.push_back(one(i));
      ServerSnap s1 = snapshot(*e.admin);
      ServerDelta d = delta(s0, s1);
      sys[i].ops += count;
      sys[i].cmds += d.commands;
      sys[i].top += d.top_level;
      sys[i].cpu_us += d.cpu_us;
      sys[i].script_usec += d.evalsha_usec;
      med[i] = median(v);
      sys[i].block_med.push_back(med[i]);
      sys[i].all_us.insert(sys[i].all_us.end(), v.begin(), v.end());
    }
    for (std::size_t i = 0; i < sys.size(); ++i) sys[i].ratios.push_back(med[i] / med[0]);
  }
  const double rtt = median(sys[0].block_med);
  Json ja = Json::object();
  ja["blocks"] = blocks;
  ja["pairs_per_block"] = n;
  ja["rtt_us"] = rtt;
  e.md += "\n### A. Uncontended acquire+release (one client, sequential)\n\n";
  e.md +=
      fmt("Median PING RTT %.0f µs. Ratios are medians over %d interleaved blocks of (block median / PING median of "
          "the same block).\n\n",
          rtt, blocks);
  e.md += "| system | median | p99 | × RTT (paired) | round trips | Redis cmds | Redis CPU µs | script time µs |\n";
  e.md += "|---|---:|---:|---:|---:|---:|---:|---:|\n";
  std::string dat;
  for (std::size_t i = 0; i < sys.size(); ++i) {
    auto& s = sys[i];
    double ratio = median(s.ratios);
    double p50 = median(s.all_us), p99 = quantile(s.all_us, 0.99);
    auto ops = static_cast<double>(s.ops);
    double rt_per = (i == 1 || i == 2) ? static_cast<double>(s.top) / ops : static_cast<double>(s.client_rt) / ops;
    Json j = Json::object();
    j["label"] = s.label;
    j["median_us"] = p50;
    j["p99_us"] = p99;
    j["ratio_to_rtt_paired_median"] = ratio;
    j["ratio_p99_to_rtt"] = p99 / rtt;
    j["block_ratios"] = [&] {
      Json a = Json::array();
      for (double r : s.ratios) a.push(r);
      return a;
    }();
    j["round_trips_per_op"] = rt_per;
    j["commands_per_op"] = static_cast<double>(s.cmds) / ops;
    j["redis_cpu_us_per_op"] = s.cpu_us / ops;
    j["script_us_per_op"] = static_cast<double>(s.script_usec) / ops;
    ja[s.key] = j;
    e.md += fmt("| %s | %.0f µs | %.0f µs | %.2f | %.1f | %.1f | %.1f | %.1f |\n", s.label.c_str(), p50, p99, ratio,
                rt_per, static_cast<double>(s.cmds) / ops, s.cpu_us / ops, static_cast<double>(s.script_usec) / ops);
    if (i > 0) dat += fmt("\"%s\" %.4f\n", s.key == "fairlock_scripts" ? "scripts" : s.key.c_str(), ratio);
  }
  e.dat["a.dat"] = dat;
  e.out["A_uncontended"] = ja;
  const double fr = median(sys[1].ratios);
  e.target("A", "uncontended acquire+release ≤ 2.3 × RTT", fmt("%.2f × RTT", fr), fr <= 2.3,
           fr <= 2.3 ? ""
                     : fmt("two round trips, plus the scripts' own Redis time: raw EVALSHA of the same scripts "
                           "(no C++ client) is %.2f × RTT, the unfair lock %.2f ×; %.0f Redis commands per pair "
                           "against 4",
                           median(sys[2].ratios), median(sys[3].ratios),
                           static_cast<double>(sys[1].cmds) / static_cast<double>(sys[1].ops)));
  say(fmt("  fairlock %.2f x RTT, scripts only %.2f, unfair %.2f, zset %.2f (RTT %.0f us)\n", fr, median(sys[2].ratios),
          median(sys[3].ratios), median(sys[4].ratios), rtt));
}

// ------------------------------------------------------------ B: contended handoff

void scenario_B(Env& e) {
  say("\n== B. Contended handoff on one lock\n");
  std::vector<int> Ws = e.smoke ? std::vector<int>{4, 16} : std::vector<int>{4, 16, 64, 256};
  if (!e.ws.empty()) Ws = e.ws;
  const int rounds = e.smoke ? 1 : 3;
  const int dur = e.smoke ? 600 : 3000;
  Json jb = Json::object();
  jb["rounds"] = rounds;
  jb["duration_ms"] = dur;
  jb["jitter_tolerance_ms"] = static_cast<double>(e.tol_ns) / 1e6;
  flushall(e);
  // Every round runs every W, fairlock and the unfair lock back to back
  // (ABBA), so all configurations share the machine's slow and fast minutes.
  std::map<int, std::vector<Measured>> fair, unfair, zset;
  for (int r = 0; r < rounds; ++r) {
    for (int W : Ws) {
      Layout L = layout(W);
      for (int k = 0; k < 2; ++k) {
        const bool is_fair = (k == 0) == (r % 2 == 0);
        RunSpec s;
        s.system = is_fair ? "fair" : "unfair";
        s.procs = L.procs;
        s.threads = L.threads;
        s.duration_ms = dur;
        (is_fair ? fair : unfair)[W].push_back(measure(e, s));
      }
    }
  }
  for (int W : Ws) {  // the sorted-set queue is too slow for rounds: one longer run
    if (!(W == 4 || (W == 16 && !e.smoke))) continue;
    Layout L = layout(W);
    RunSpec s;
    s.system = "zset";
    s.procs = L.procs;
    s.threads = L.threads;
    s.duration_ms = e.smoke ? 1500 : (W == 4 ? 6000 : 8000);
    zset[W].push_back(measure(e, s));
  }

  std::map<int, Summary> fair_s, unfair_s, zset_s;
  std::map<int, double> paired_grants;
  std::string md_rows, dat_f, dat_u, dat_z;
  for (int W : Ws) {
    Layout L = layout(W);
    Summary fs = summarise(fair[W]), us = summarise(unfair[W]);
    std::vector<double> pg;
    for (std::size_t i = 0; i < fair[W].size() && i < unfair[W].size(); ++i) {
      const Measured &f = fair[W][i], &u = unfair[W][i];
      if (f.ok && u.ok && u.m.cross_per_s > 0) pg.push_back(f.m.grants_per_s / u.m.cross_per_s);
    }
    paired_grants[W] = median(pg);
    fair_s[W] = fs;
    unfair_s[W] = us;
    Json jw = Json::object();
    jw["processes"] = L.procs;
    jw["threads_per_process"] = L.threads;
    jw["fair"] = summary_json(fs);
    jw["unfair"] = summary_json(us);
    jw["fair_grants_over_unfair_other_participant_grants_paired"] = paired_grants[W];
    Json runs = Json::array();
    for (std::size_t i = 0; i < fair[W].size(); ++i) runs.push(metrics_json(fair[W][i], i == 0));
    for (std::size_t i = 0; i < unfair[W].size(); ++i) runs.push(metrics_json(unfair[W][i], i == 0));
    if (zset.count(W)) {
      zset_s[W] = summarise(zset[W]);
      jw["zset"] = summary_json(zset_s[W]);
      runs.push(metrics_json(zset[W][0], true));
    }
    jw["runs"] = runs;
    jb[fmt("W%d", W)] = jw;

    auto row = [&](const char* sys, const Summary& s) {
      md_rows +=
          fmt("| %d | %s | %s | %s | %s | %s | %.2f (%.2f) | %.1f %% (%.1f %%) | %s / %s | %.1f | %.0f µs | %.0f µs | "
              "%.2f |\n",
              W, sys, thousands(s.grants_per_s).c_str(), thousands(s.cross_per_s).c_str(),
              lat_cell(s.p50_us, s.p50_rtt).c_str(), lat_cell(s.p99_us, s.p99_rtt).c_str(), s.overtakes_per_100,
              s.strict_per_100, s.regrab_pct, s.regrab_waiting_pct, num(s.wait_p99_ms, 1).c_str(),
              num(s.wait_max_ms, 0).c_str(), s.cmds_pg, s.cpu_pg, s.script_us_pg, s.rt_pg);
    };
    row("fairlock", fs);
    row("unfair", us);
    if (zset_s.count(W)) row("zset queue", zset_s[W]);
    dat_f += fmt("%d %.2f %.4f %.4f %.4f %.4f\n", W, fs.grants_per_s, fs.p50_rtt, fs.p99_rtt, fs.wait_p99_ms,
                 fs.wait_max_ms);
    dat_u += fmt("%d %.2f %.2f %.4f %.4f %.4f %.4f\n", W, us.grants_per_s, us.cross_per_s, us.p50_rtt, us.p99_rtt,
                 us.wait_p99_ms, us.wait_max_ms);
    if (zset_s.count(W)) {
      dat_z += fmt("%d %.2f %.4f %.4f\n", W, zset_s[W].grants_per_s, zset_s[W].wait_p99_ms, zset_s[W].wait_max_ms);
    }
  }
  e.dat["b_fair.dat"] = dat_f;
  e.dat["b_unfair.dat"] = dat_u;
  e.dat["b_zset.dat"] = dat_z;
  e.out["B_contended_lock"] = jb;
  e.md += "\n### B. Contended handoff: W participants on one lock, holding for ~0\n\n";
  e.md +=
      fmt("W ≤ 16: one process per participant; W = 64: 4 processes × 16 threads; W = 256: 8 × 32. Medians of %d "
          "rounds of %.0f s; each round runs every W and both locks back to back (the sorted-set queue: one "
          "longer run). Handoff = one holder's unlock() returned → the next holder's lock() returned, × the PING "
          "RTT measured around the same run. Overtakes per 100 grants with a %.0f ms allowance for client-side "
          "jitter (in brackets: none). Self re-grabs: share of grants taken by the participant that had just "
          "released (in brackets: while another had been waiting since before the release). Redis CPU per grant: "
          "the server process's CPU time (INFO cpu) over the run ÷ grants; script time: Redis's own EVALSHA "
          "accounting ÷ grants.\n\n",
          rounds, dur / 1000.0, static_cast<double>(e.tol_ns) / 1e6);
  e.md +=
      "| W | system | grants/s | grants/s to another participant | handoff p50 | handoff p99 | overtakes /100 | "
      "self re-grabs | wait p99 / max (ms) | Redis cmds/grant | Redis CPU/grant | script time/grant | round "
      "trips/grant |\n";
  e.md += "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  e.md += md_rows;

  // The residual overtakes, classified with the tickets' arrival stamps.
  std::string cls;
  for (int W : Ws) {
    const Summary& f = fair_s[W];
    cls += fmt("| %d | %lld | %lld | %lld | %lld | %.1f | %.1f / %.1f |\n", W, f.overtakes, f.later_arrival,
               f.fifo_violations, f.unclassified, f.margin_max_ms, f.arrival_p99_ms, f.arrival_max_ms);
  }
  e.md +=
      "\nfairlock's overtakes, classified: a ticket is `max(last + 1, now_ms × 1000)`, so it stamps the "
      "millisecond at which the request reached Redis. *Reached Redis later*: the overtaken request was "
      "timestamped first but its acquire reached Redis after the overtaker's (delay inside the client before the "
      "script ran). *FIFO violations*: it reached Redis first and was still granted later.\n\n"
      "| W | overtakes (2 ms allowance) | overtaken reached Redis later | FIFO violations | not classifiable "
      "(cancelled at stop) | largest lead (ms) | lock() → Redis delay p99 / max (ms) |\n"
      "|---:|---:|---:|---:|---:|---:|---:|\n" +
      cls;

  // Targets.
  if (fair_s.count(16)) {
    const Summary& f = fair_s[16];
    e.target("B1", "W=16 handoff p50 ≤ 2 × RTT", fmt("%.2f × RTT (%.0f µs)", f.p50_rtt, f.p50_us), f.p50_rtt <= 2,
             f.p50_rtt <= 2 ? "" : "see the handoff notes");
    e.target("B2", "W=16 handoff p99 ≤ 10 × RTT", fmt("%.1f × RTT (%.0f µs)", f.p99_rtt, f.p99_us), f.p99_rtt <= 10,
             f.p99_rtt <= 10 ? "" : "see the handoff notes");
    double pr = paired_grants[16];
    e.target("B3", "W=16 grants/s ≥ unfair lock's grants/s to another participant",
             fmt("%.0f vs %.0f /s (paired ratio %.2f)", f.grants_per_s, unfair_s[16].cross_per_s, pr), pr >= 1);
  }
  long long ot = 0, rg = 0, inv = 0, later = 0, viol = 0, uncl = 0;
  double rt_max = 0, arrival_max = 0;
  std::string rt_list, ot_list;
  double cmin = 1e18, cmax = 0, pmin = 1e18, pmax = 0, smin = 1e18, smax = 0;
  for (auto& [W, s] : fair_s) {
    ot += s.overtakes;
    rg += s.regrabs_waiting;
    inv += s.inversions;
    later += s.later_arrival;
    viol += s.fifo_violations;
    uncl += s.unclassified;
    arrival_max = std::max(arrival_max, s.arrival_max_ms);
    rt_max = std::max(rt_max, s.rt_pg);
    rt_list += fmt("%s%d: %.2f", rt_list.empty() ? "" : ", ", W, s.rt_pg);
    ot_list += fmt("%s%d: %lld", ot_list.empty() ? "" : ", ", W, s.overtakes);
    cmin = std::min(cmin, s.cmds_pg);
    cmax = std::max(cmax, s.cmds_pg);
    pmin = std::min(pmin, s.cpu_pg);
    pmax = std::max(pmax, s.cpu_pg);
    smin = std::min(smin, s.script_us_pg);
    smax = std::max(smax, s.script_us_pg);
  }
  e.target("B4", "0 overtakes at every W (2 ms jitter allowance)",
           fmt("%lld (by W: %s); fence inversions %lld", ot, ot_list.c_str(), inv), ot == 0 && inv == 0,
           ot == 0 ? ""
                   : fmt("%lld of them: the overtaken request reached Redis later than its overtaker (its lock() "
                         "took up to %.0f ms to reach Redis); FIFO violations %lld; not classifiable %lld",
                         later, arrival_max, viol, uncl));
  e.target("B5", "0 self re-grabs while others wait, at every W", fmt("%lld", rg), rg == 0);
  e.target("B6", "round trips per grant ≤ 2.5", fmt("max %.2f (by W: %s)", rt_max, rt_list.c_str()), rt_max <= 2.5);
  if (fair_s.size() > 1) {
    double cs = cmax / cmin, ps = pmax / pmin, ss = smax / smin;
    e.target("B7", "Redis commands per grant flat within 10 % over W",
             fmt("%.1f–%.1f (spread %.0f %%)", cmin, cmax, (cs - 1) * 100), cs <= 1.10);
    // The same W's rounds differ too: that is the measurement's noise floor.
    double noise_cpu = 0, noise_script = 0;
    std::string by_w;
    for (int W : Ws) {
      std::vector<double> c, sc;
      for (const auto& r : fair[W]) {
        if (!r.ok || r.m.grants == 0) continue;
        c.push_back(r.cpu_pg);
        sc.push_back(r.script_us_pg);
      }
      if (c.size() > 1) {
        noise_cpu =
            std::max(noise_cpu, *std::max_element(c.begin(), c.end()) / *std::min_element(c.begin(), c.end()) - 1);
        noise_script = std::max(noise_script,
                                *std::max_element(sc.begin(), sc.end()) / *std::min_element(sc.begin(), sc.end()) - 1);
      }
      by_w += fmt("%s%d: %.0f", by_w.empty() ? "" : ", ", W, fair_s[W].cpu_pg);
    }
    e.target("B8", "Redis CPU per grant flat within 10 % over W",
             fmt("%.0f–%.0f µs (spread %.0f %%); script time %.0f–%.0f µs (spread %.0f %%)", pmin, pmax, (ps - 1) * 100,
                 smin, smax, (ss - 1) * 100),
             ps <= 1.10,
             ps <= 1.10 ? ""
                        : fmt("median µs by W: %s, while commands per grant are flat; the rounds of one and the same W "
                              "differ by up to %.0f %% (CPU) and %.0f %% (script time) on this machine: compare the "
                              "spread over W with that",
                              by_w.c_str(), noise_cpu * 100, noise_script * 100));
  }
}

// ------------------------------------------------------------ C: semaphore

void scenario_C(Env& e) {
  say("\n== C. Semaphore of 4\n");
  const std::vector<int> Ws = e.smoke ? std::vector<int>{16} : std::vector<int>{16, 64};
  const int rounds = e.smoke ? 1 : 3;
  const int dur = e.smoke ? 600 : 3000;
  Json jc = Json::object();
  e.md += "\n### C. Semaphore of 4 permits, holding for ~0\n\n";
  e.md +=
      "Grant order is the server's: an observer subscribed to the workers' wake channels sees every handoff "
      "grant in the order the scripts made them; it must follow the tickets (fences), and overtakes are then "
      "counted against fence order with the 2 ms allowance on the start of waiting (in brackets: none).\n\n";
  e.md +=
      "| W | admissions/s | overtakes /100 | handoff grants out of ticket order (server) | max concurrent "
      "holders | wait p99 / max (ms) | Redis cmds/grant | round trips/grant |\n"
      "|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  long long ot = 0, obs_all = 0, inv_all = 0, later = 0, uncl = 0;
  double arrival_max = 0;
  int maxh = 0;
  for (int W : Ws) {
    flushall(e);
    Layout L = layout(W);
    std::vector<Measured> runs;
    for (int r = 0; r < rounds; ++r) {
      RunSpec s;
      s.system = "fair";
      s.procs = L.procs;
      s.threads = L.threads;
      s.permits = 4;
      s.duration_ms = dur;
      s.observe = true;
      runs.push_back(measure(e, s));
    }
    Summary sm = summarise(runs);
    long long obs = 0, inv = 0;
    for (const auto& r : runs) {
      obs += r.observed_grants;
      inv += r.observed_inversions;
    }
    obs_all += obs;
    inv_all += inv;
    ot += sm.overtakes;
    later += sm.later_arrival;
    uncl += sm.unclassified;
    arrival_max = std::max(arrival_max, sm.arrival_max_ms);
    maxh = std::max(maxh, sm.max_holders);
    Json jw = summary_json(sm);
    Json jr = Json::array();
    for (std::size_t i = 0; i < runs.size(); ++i) jr.push(metrics_json(runs[i], i == 0));
    jw["runs"] = jr;
    jw["observed_handoff_grants"] = obs;
    jw["observed_out_of_ticket_order"] = inv;
    jc[fmt("W%d", W)] = jw;
    e.md += fmt("| %d | %s | %.2f (%.2f) | %lld of %lld | %d | %s / %s | %.1f | %.2f |\n", W,
                thousands(sm.grants_per_s).c_str(), sm.overtakes_per_100, sm.strict_per_100, inv, obs, sm.max_holders,
                num(sm.wait_p99_ms, 1).c_str(), num(sm.wait_max_ms, 0).c_str(), sm.cmds_pg, sm.rt_pg);
  }
  e.out["C_semaphore"] = jc;
  e.target("C1", "semaphore: never more than 4 holders", fmt("max %d", maxh), maxh <= 4 && maxh > 0);
  e.target("C2", "semaphore: 0 overtakes (2 ms allowance)",
           fmt("%lld; server grant order: %lld of %lld handoff grants out of ticket order", ot, inv_all, obs_all),
           ot == 0 && inv_all == 0,
           ot == 0 ? ""
                   : fmt("%lld of them: the overtaken request reached Redis after its overtaker (its lock() took "
                         "up to %.0f ms to reach Redis); not classifiable (cancelled at stop) %lld",
                         later, arrival_max, uncl));
}

// ------------------------------------------------------------ D: one long queue

CmdStat evalsha_stat(Redis& r) {
  Reply rep = r.cmd({"INFO", "commandstats"});
  std::string text = reply_str(rep.get());
  CmdStat c;
  auto pos = text.find("cmdstat_evalsha:");
  if (pos == std::string::npos) return c;
  std::sscanf(text.c_str() + pos, "cmdstat_evalsha:calls=%lld,usec=%lld", &c.calls, &c.usec);
  return c;
}

void scenario_D(Env& e) {
  say("\n== D. Scale of one queue\n");
  flushall(e);
  const std::vector<long long> sizes =
      e.smoke ? std::vector<long long>{10, 1000} : std::vector<long long>{10, 1000, 10000, 100000};
  const int cycles = e.smoke ? 100 : 2000;
  Json jd = Json::object();
  e.md += "\n### D. Scale of one queue (waiters are protocol-level entries kept alive by a long liveness)\n\n";
  e.md +=
      fmt("Server time per script call is Redis's own `usec` accounting (INFO commandstats), call by call, for "
          "the acquire that queues a newcomer at the tail and the release that hands the lock to the head (the "
          "queue keeps its length). The sizes are measured interleaved, %d cycles each; mean (median).\n\n",
          cycles);
  e.md +=
      "| queued waiters | acquire (queue) µs/call | release (handoff) µs/call | bytes/waiter (MEMORY USAGE q+w) "
      "| bytes/waiter (used_memory) |\n|---:|---:|---:|---:|---:|\n";
  Redis c(e.host, e.port, 30000);
  const std::uint64_t cid = 0xd0d0d0d0ULL;
  std::uint64_t counter = 0;
  struct Queue {
    long long n;
    std::unique_ptr<RawKeys> k;
    std::string holder;
    std::deque<std::string> waiters;
    std::vector<double> acq, rel, acq_wall, rel_wall;
    long long mq = 0, mw = 0;
    double per_waiter = 0, per_waiter_info = 0;
  };
  std::vector<Queue> qs;
  for (long long N : sizes) {
    Queue q;
    q.n = N;
    q.k = std::make_unique<RawKeys>("fairlock", fmt("bench:D:%lld", N));
    const long long mem0 = snapshot(*e.admin).used_memory;
    q.holder = fake_member('p', cid, ++counter);
    Reply h = c.cmd(raw_acquire_argv(*q.k, q.holder, 1, 600000, 600000, 'q'));
    if (h->type != REDIS_REPLY_ARRAY || reply_int(h->element[0]) != 1) {
      e.fail("D: holder not granted: " + reply_text(h.get()));
      return;
    }
    for (long long i = 0; i < N;) {
      std::vector<std::vector<std::string>> batch;
      for (int b = 0; b < 1000 && i < N; ++b, ++i) {
        q.waiters.push_back(fake_member('p', cid, ++counter));
        batch.push_back(raw_acquire_argv(*q.k, q.waiters.back(), 1, 600000, 600000, 'q'));
      }
      for (auto& r : c.pipeline(batch)) {
        if (r->type != REDIS_REPLY_ARRAY || reply_int(r->element[0]) != 0) {
          e.fail("D: waiter not queued: " + reply_text(r.get()));
          return;
        }
      }
    }
    const long long mem1 = snapshot(*e.admin).used_memory;
    q.mq = reply_int(c.cmd({"MEMORY", "USAGE", q.k->q, "SAMPLES", "0"}).get());
    q.mw = reply_int(c.cmd({"MEMORY", "USAGE", q.k->w, "SAMPLES", "0"}).get());
    q.per_waiter = static_cast<double>(q.mq + q.mw) / static_cast<double>(N);
    q.per_waiter_info = static_cast<double>(mem1 - mem0) / static_cast<double>(N);
    qs.push_back(std::move(q));
  }
  for (int i = 0; i < cycles; ++i) {
    for (auto& q : qs) {
      CmdStat s0 = evalsha_stat(c);
      std::string m = fake_member('p', cid, ++counter);
      std::int64_t t0 = now_ns();
      Reply a = c.cmd(raw_acquire_argv(*q.k, m, 1, 600000, 600000, 'q'));
      std::int64_t t1 = now_ns();
      CmdStat s1 = evalsha_stat(c);
      Reply r = c.cmd(raw_release_argv(*q.k, q.holder, 1));
      std::int64_t t2 = now_ns();
      CmdStat s2 = evalsha_stat(c);
      if (a->type != REDIS_REPLY_ARRAY || reply_int(a->element[0]) != 0 || reply_int(r.get()) != 1) {
        e.fail("D: unexpected reply " + reply_text(a.get()) + " / " + reply_text(r.get()));
        return;
      }
      if (s1.calls - s0.calls != 1 || s2.calls - s1.calls != 1) {
        e.fail("D: another client ran scripts during the measurement");
        return;
      }
      q.acq.push_back(static_cast<double>(s1.usec - s0.usec));
      q.rel.push_back(static_cast<double>(s2.usec - s1.usec));
      q.acq_wall.push_back(static_cast<double>(t1 - t0) / 1e3);
      q.rel_wall.push_back(static_cast<double>(t2 - t1) / 1e3);
      q.waiters.push_back(m);
      q.holder = q.waiters.front();
      q.waiters.pop_front();
    }
  }
  auto mean = [](const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x;
    return v.empty() ? NAN : s / static_cast<double>(v.size());
  };
  std::string dat;
  for (auto& q : qs) {
    Json j = Json::object();
    j["waiters"] = q.n;
    j["cycles"] = cycles;
    j["acquire_usec_per_call_mean"] = mean(q.acq);
    j["acquire_usec_per_call_median"] = median(q.acq);
    j["release_usec_per_call_mean"] = mean(q.rel);
    j["release_usec_per_call_median"] = median(q.rel);
    j["acquire_wall_us_median"] = median(q.acq_wall);
    j["release_wall_us_median"] = median(q.rel_wall);
    j["memory_usage_q_bytes"] = q.mq;
    j["memory_usage_w_bytes"] = q.mw;
    j["bytes_per_waiter_memory_usage"] = q.per_waiter;
    j["bytes_per_waiter_used_memory"] = q.per_waiter_info;
    jd[fmt("N%lld", q.n)] = j;
    e.md += fmt("| %lld | %.1f (%.0f) | %.1f (%.0f) | %.0f | %.0f |\n", q.n, mean(q.acq), median(q.acq), mean(q.rel),
                median(q.rel), q.per_waiter, q.per_waiter_info);
    dat += fmt("%lld %.3f %.3f %.1f\n", q.n, mean(q.acq), mean(q.rel), q.per_waiter);
    say(fmt("  %6lld waiters: acquire %.1f us/call, release %.1f us/call, %.0f bytes/waiter\n", q.n, mean(q.acq),
            mean(q.rel), q.per_waiter));
    for (const std::string& key : {q.k->q, q.k->w, q.k->h, q.k->g, q.k->seq}) c.cmd({"UNLINK", key});
  }
  e.dat["d.dat"] = dat;
  e.out["D_one_queue"] = jd;
  const Queue &lo = qs.front(), &hi = qs.back();
  const double ra = mean(hi.acq) / mean(lo.acq), rr = mean(hi.rel) / mean(lo.rel);
  e.target("D1", fmt("per-call script cost at %lld waiters ≤ 2 × at %lld", hi.n, lo.n),
           fmt("acquire %.2f×, release %.2f×", ra, rr), ra <= 2 && rr <= 2);
  e.target("D2", "≤ 200 bytes per waiter", fmt("%.0f bytes (MEMORY USAGE of q + w at %lld)", hi.per_waiter, hi.n),
           hi.per_waiter <= 200,
           hi.per_waiter <= 200 ? ""
                                : "each waiter is a 50-byte member stored in two sorted sets (q by ticket, w by "
                                  "deadline): two skiplist nodes, two dict entries, two copies of the member");
}

// ------------------------------------------------------------ E: many names

void scenario_E(Env& e) {
  say("\n== E. Many names\n");
  flushall(e);
  const int names = e.smoke ? 1000 : 10000;
  const int threads = 8;
  const int rounds = e.smoke ? 1 : 3;
  fairlock::Options o;
  o.url = e.url();
  o.pool_size = threads;
  fairlock::Client client(o);
  std::vector<std::unique_ptr<fairlock::FairLock>> locks;
  for (int i = 0; i < names; ++i) locks.push_back(std::make_unique<fairlock::FairLock>(client, fmt("bench:E:%d", i)));
  std::vector<std::unique_ptr<Redis>> conns;
  for (int t = 0; t < threads; ++t) conns.push_back(std::make_unique<Redis>(e.host, e.port));
  const std::string sha = load_unlock_script(*conns[0]);
  std::atomic<long long> errors{0};

  // One round: every thread takes all of its names (holding them), then
  // releases them all.
  auto fair_round = [&] {
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t) {
      ts.emplace_back([&, t] {
        try {
          for (int i = t; i < names; i += threads) {
            if (!locks[static_cast<std::size_t>(i)]->try_lock_for(std::chrono::seconds(10))) errors++;
          }
          for (int i = t; i < names; i += threads) locks[static_cast<std::size_t>(i)]->unlock();
        } catch (const std::exception&) {
          errors++;
        }
      });
    }
    for (auto& th : ts) th.join();
  };
  auto unfair_round = [&] {
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t) {
      ts.emplace_back([&, t] {
        try {
          RtCounter rt;
          Redis& c = *conns[static_cast<std::size_t>(t)];
          const std::int64_t give_up = now_ns() + 10000 * kMs;
          for (int i = t; i < names; i += threads) {
            if (!unfair_lock(
                    c, fmt("bench:E:u:%d", i), "tok", [&] { return now_ns() > give_up; }, rt))
              errors++;
          }
          for (int i = t; i < names; i += threads) unfair_unlock(c, sha, fmt("bench:E:u:%d", i), "tok", rt);
        } catch (const std::exception&) {
          errors++;
        }
      });
    }
    for (auto& th : ts) th.join();
  };
  std::vector<double> fair_rate, unfair_rate, ratio, fair_cmds, unfair_cmds;
  for (int r = 0; r < rounds; ++r) {
    double rate[2] = {0, 0};
    for (int k = 0; k < 2; ++k) {
      const bool is_fair = (k == 0) == (r % 2 == 0);
      ServerSnap s0 = snapshot(*e.admin);
      std::int64_t t0 = now_ns();
      if (is_fair) fair_round();
      else unfair_round();
      double secs = static_cast<double>(now_ns() - t0) / 1e9;
      ServerDelta d = delta(s0, snapshot(*e.admin));
      rate[is_fair ? 0 : 1] = names / secs;
      (is_fair ? fair_cmds : unfair_cmds).push_back(static_cast<double>(d.commands) / names);
    }
    fair_rate.push_back(rate[0]);
    unfair_rate.push_back(rate[1]);
    ratio.push_back(rate[0] / rate[1]);
    say(fmt("  round %d: fairlock %.0f grants/s, unfair %.0f grants/s\n", r, rate[0], rate[1]));
  }
  if (errors.load() > 0) e.fail(fmt("E: %lld errors", errors.load()));
  Json j = Json::object();
  j["names"] = names;
  j["threads"] = threads;
  j["rounds"] = rounds;
  j["fair_grants_per_s"] = median(fair_rate);
  j["unfair_grants_per_s"] = median(unfair_rate);
  j["fair_over_unfair_paired"] = median(ratio);
  j["fair_commands_per_grant"] = median(fair_cmds);
  j["unfair_commands_per_grant"] = median(unfair_cmds);
  j["heartbeats"] = static_cast<long long>(client.stats().heartbeats);
  e.out["E_many_names"] = j;
  e.md +=
      fmt("\n### E. Many names: %d lock names, %d threads each taking its share then releasing it\n\n", names, threads);
  e.md += "| system | grants/s (median of rounds) | Redis cmds/grant (release included) |\n|---|---:|---:|\n";
  e.md += fmt("| fairlock | %.0f | %.1f |\n| unfair SET NX | %.0f | %.1f |\n", median(fair_rate), median(fair_cmds),
              median(unfair_rate), median(unfair_cmds));
  e.md += fmt("\nPaired ratio fairlock / unfair: %.2f.\n", median(ratio));
}

// ------------------------------------------------------------ F: heartbeat cost

void scenario_F(Env& e) {
  say("\n== F. Heartbeat cost\n");
  const std::vector<int> sizes = e.smoke ? std::vector<int>{1, 10} : std::vector<int>{1, 100, 1000};
  const int liveness_ms = e.smoke ? 300 : 1500;  // heartbeat period = liveness / 3
  const int intervals = e.smoke ? 4 : 8;
  Json jf = Json::object();
  jf["liveness_ttl_ms"] = liveness_ms;
  e.md += fmt("\n### F. Heartbeat cost: one process hosting N waiters (liveness_ttl %d ms, heartbeat every %d ms)\n\n",
              liveness_ms, liveness_ms / 3);
  e.md +=
      "The lock is held by an entry with a long lease, so the waiters only wait. Per heartbeat interval, for "
      "the whole process:\n\n";
  e.md +=
      "| waiters | names | round trips | EVALSHA calls | Redis cmds (inside scripts included) | acquire "
      "re-checks (timer wake-ups) | script time µs |\n|---:|---:|---:|---:|---:|---:|---:|\n";
  double worst_rt = 0;
  std::string rt_list;
  for (int names_mode = 0; names_mode < 2; ++names_mode) {
    for (int N : sizes) {
      if (names_mode == 1 && N == 1) continue;
      flushall(e);
      const int nnames = names_mode == 0 ? 1 : N;
      Redis c(e.host, e.port);
      std::vector<std::vector<std::string>> holds;
      for (int i = 0; i < nnames; ++i) {
        RawKeys k("fairlock", fmt("bench:F:%d", i));
        holds.push_back(raw_acquire_argv(k, fake_member('n', 0xf00dULL, static_cast<std::uint64_t>(i) + 1), 1, 600000,
                                         600000, 'q'));
      }
      for (auto& r : c.pipeline(holds)) {
        if (r->type != REDIS_REPLY_ARRAY || reply_int(r->element[0]) != 1) {
          e.fail("F: holder not granted: " + reply_text(r.get()));
          return;
        }
      }
      fairlock::Options o;
      o.url = e.url();
      o.liveness_ttl = std::chrono::milliseconds(liveness_ms);
      auto client = std::make_unique<fairlock::Client>(o);
      std::vector<std::unique_ptr<fairlock::FairLock>> locks;
      for (int i = 0; i < N; ++i) {
        locks.push_back(std::make_unique<fairlock::FairLock>(*client, fmt("bench:F:%d", i % nnames)));
      }
      std::atomic<int> finished{0};
      std::atomic<int> granted{0};
      std::vector<std::thread> ts;
      for (int i = 0; i < N; ++i) {
        ts.emplace_back([&, i] {
          try {
            locks[static_cast<std::size_t>(i)]->lock();
            granted++;
            locks[static_cast<std::size_t>(i)]->unlock();
          } catch (const std::exception&) {
          }
          finished++;
        });
      }
      const std::int64_t ready_by = now_ns() + 30000 * kMs;
      while (client->stats().waits < static_cast<std::uint64_t>(N) && now_ns() < ready_by) sleep_ns(10 * kMs);
      if (client->stats().waits < static_cast<std::uint64_t>(N))
        e.fail(fmt("F: only %llu of %d waiting", static_cast<unsigned long long>(client->stats().waits), N));
      sleep_ns(static_cast<std::int64_t>(liveness_ms) * kMs);  // settle: every waiter past its first acquire
      fairlock::Stats st0 = client->stats();
      ServerSnap s0 = snapshot(*e.admin);
      sleep_ns(static_cast<std::int64_t>(intervals) * liveness_ms / 3 * kMs);
      ServerSnap s1 = snapshot(*e.admin);
      fairlock::Stats st1 = client->stats();
      ServerDelta d = delta(s0, s1);
      const auto iv = static_cast<double>(st1.heartbeats - st0.heartbeats);
      const auto timer = static_cast<double>(st1.wakes_timer - st0.wakes_timer);
      // Leave: cancel every wait (bounded).
      const std::int64_t give_up = now_ns() + 30000 * kMs;
      while (finished.load() < N && now_ns() < give_up) {
        for (auto& l : locks) l->cancel();
        sleep_ns(20 * kMs);
      }
      if (finished.load() < N) {
        e.fail("F: waiters did not leave");
        for (int i = 0; i < g_nkids; ++i) {
          if (g_kids[i] > 0) ::kill(g_kids[i], SIGKILL);
        }
        std::fflush(stdout);
        std::_Exit(5);
      }
      for (auto& th : ts) th.join();
      if (granted.load() > 0) e.fail("F: a waiter was granted a held lock");
      locks.clear();
      client.reset();
      // The heartbeat pipelines one EVALSHA per name into one round trip;
      // every other top-level command is a round trip of its own.
      const double hb_calls = iv * nnames;
      const double other =
          static_cast<double>(d.top_level - d.evalsha) + std::max(0.0, static_cast<double>(d.evalsha) - hb_calls);
      const double rt_iv = iv > 0 ? (iv + other) / iv : NAN;
      worst_rt = std::max(worst_rt, rt_iv);
      rt_list += fmt("%s%d waiter%s/%d name%s: %.1f", rt_list.empty() ? "" : "; ", N, N == 1 ? "" : "s", nnames,
                     nnames == 1 ? "" : "s", rt_iv);
      Json j = Json::object();
      j["waiters"] = N;
      j["names"] = nnames;
      j["heartbeat_intervals"] = iv;
      j["round_trips_per_interval"] = rt_iv;
      j["heartbeat_round_trips_per_interval"] = 1.0;
      j["commands_per_interval"] = iv > 0 ? static_cast<double>(d.commands) / iv : NAN;
      j["evalsha_per_interval"] = iv > 0 ? static_cast<double>(d.evalsha) / iv : NAN;
      j["timer_rechecks_per_interval"] = iv > 0 ? timer / iv : NAN;
      j["redis_cpu_us_per_interval"] = iv > 0 ? d.cpu_us / iv : NAN;
      j["script_us_per_interval"] = iv > 0 ? static_cast<double>(d.evalsha_usec) / iv : NAN;
      Json cmds = Json::object();
      for (const auto& [k, v] : d.per_command) cmds[k] = v;
      j["commands"] = cmds;
      jf[fmt("%s_N%d", names_mode == 0 ? "one_name" : "many_names", N)] = j;
      e.md +=
          fmt("| %d | %d | %.2f | %.0f | %.0f | %.2f | %.0f |\n", N, nnames, rt_iv,
              iv > 0 ? static_cast<double>(d.evalsha) / iv : NAN, iv > 0 ? static_cast<double>(d.commands) / iv : NAN,
              iv > 0 ? timer / iv : NAN, iv > 0 ? static_cast<double>(d.evalsha_usec) / iv : NAN);
      say(
          fmt("  %4d waiters on %4d names: %.0f intervals, %.1f round trips/interval, %.0f cmds/interval, %.1f "
              "timer re-checks/interval\n",
              N, nnames, iv, rt_iv, iv > 0 ? static_cast<double>(d.commands) / iv : NAN, iv > 0 ? timer / iv : NAN));
    }
  }
  e.out["F_heartbeat"] = jf;
  e.target("F", "one round trip per heartbeat interval per process, whatever the number of waiters",
           fmt("worst %.1f (%s)", worst_rt, rt_list.c_str()), worst_rt <= 1.05,
           worst_rt <= 1.05 ? "" : "waiters made round trips of their own between heartbeats");
}

// ------------------------------------------------------------ G: wake transports

void scenario_G(Env& e) {
  const int W = e.smoke ? 4 : 16;
  say(fmt("\n== G. Wake transports at W=%d\n", W));
  flushall(e);
  const int rounds = e.smoke ? 1 : 3;
  const int dur = e.smoke ? 600 : 3000;
  const std::vector<std::string> modes = {"publish", "keyspace", "poll"};
  std::map<std::string, std::vector<Measured>> runs;
  for (int r = 0; r < rounds; ++r) {
    for (std::size_t k = 0; k < modes.size(); ++k) {
      const std::string& mode = modes[(k + static_cast<std::size_t>(r)) % modes.size()];
      if (mode == "keyspace") e.admin->cmd({"CONFIG", "SET", "notify-keyspace-events", "K$"});
      RunSpec s;
      s.system = "fair";
      s.notify = mode;
      s.procs = W;
      s.threads = 1;
      s.duration_ms = dur;
      Measured m = measure(e, s);
      if (mode == "keyspace") e.admin->cmd({"CONFIG", "SET", "notify-keyspace-events", ""});
      for (const auto& got : m.modes) {
        if (got != mode) e.fail("G: a worker asked for " + mode + " but runs " + got);
      }
      runs[mode].push_back(std::move(m));
    }
  }
  Json jg = Json::object();
  jg["W"] = W;
  e.md +=
      fmt("\n### G. Wake transports, W = %d processes on one lock (medians of %d interleaved rounds)\n\n", W, rounds);
  e.md +=
      "| transport | handoff p50 | handoff p99 | grants/s | round trips/grant | Redis cmds/grant | wake-ups per "
      "grant: signal / keyspace / timer / heartbeat |\n|---|---:|---:|---:|---:|---:|---:|\n";
  std::string dat;
  for (const auto& mode : modes) {
    Summary s = summarise(runs[mode]);
    Json j = summary_json(s);
    Json jr = Json::array();
    for (std::size_t i = 0; i < runs[mode].size(); ++i) jr.push(metrics_json(runs[mode][i], i == 0));
    j["runs"] = jr;
    jg[mode] = j;
    e.md += fmt("| %s | %s | %s | %s | %.2f | %.1f | %.2f / %.2f / %.2f / %.2f |\n", mode.c_str(),
                lat_cell(s.p50_us, s.p50_rtt).c_str(), lat_cell(s.p99_us, s.p99_rtt).c_str(),
                thousands(s.grants_per_s).c_str(), s.rt_pg, s.cmds_pg, s.wakes_signal_pg, s.wakes_keyspace_pg,
                s.wakes_timer_pg, s.wakes_heartbeat_pg);
    dat += fmt("\"%s\" %.4f %.4f\n", mode.c_str(), s.p50_rtt, s.p99_rtt);
  }
  e.dat["g.dat"] = dat;
  e.out["G_transports"] = jg;
}

// ------------------------------------------------------------ output

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

Json machine(Env& e) {
  Json m = Json::object();
  m["nproc"] = static_cast<long long>(sysconf(_SC_NPROCESSORS_ONLN));
  std::string cpu = "unknown";
  {
    std::ifstream f("/proc/cpuinfo");
    std::string line;
    while (std::getline(f, line)) {
      if (line.rfind("model name", 0) == 0) {
        cpu = line.substr(line.find(':') + 2);
        break;
      }
    }
  }
  m["cpu"] = cpu;
  utsname u{};
  if (::uname(&u) == 0) m["kernel"] = std::string(u.sysname) + " " + u.release;
  {
    std::ifstream f("/proc/meminfo");
    std::string k;
    long long kb = 0;
    f >> k >> kb;
    m["mem_gb"] = static_cast<double>(kb) / 1024 / 1024;
  }
  Reply r = e.admin->cmd({"INFO", "server"});
  std::string info = reply_str(r.get());
  auto pos = info.find("redis_version:");
  if (pos != std::string::npos) m["redis_version"] = info.substr(pos + 14, info.find('\r', pos) - pos - 14);
  m["hiredis_version"] = fmt("%d.%d.%d", HIREDIS_MAJOR, HIREDIS_MINOR, HIREDIS_PATCH);
  m["fairlock_version"] = FAIRLOCK_VERSION_STRING;
  std::string redis_version = pos != std::string::npos ? info.substr(pos + 14, info.find('\r', pos) - pos - 14) : "?";
  std::string sub = fmt("%ld CPUs (%s), redis %s, hiredis %d.%d.%d, loopback TCP; fairlock %s %s",
                        sysconf(_SC_NPROCESSORS_ONLN), cpu.c_str(), redis_version.c_str(), HIREDIS_MAJOR, HIREDIS_MINOR,
                        HIREDIS_PATCH, FAIRLOCK_VERSION_STRING, e.git_rev.c_str());
  for (char& c : sub) {
    if (c == '\'' || c == '"' || c == '\\') c = ' ';
  }
  e.dat["subtitle.txt"] = sub;
  return m;
}

void write_text(const std::string& path, const std::string& text) {
  if (path.empty()) return;
  std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp);
    f << text;
  }
  std::rename(tmp.c_str(), path.c_str());
}

}  // namespace

int driver_main(int argc, char** argv) {
  Env e;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error("missing value for " + a);
      return argv[++i];
    };
    if (a == "--port") e.port = std::atoi(next().c_str());
    else if (a == "--smoke") e.smoke = true;
    else if (a == "--json") e.json_path = next();
    else if (a == "--md") e.md_path = next();
    else if (a == "--chart-data") e.chart_dir = next();
    else if (a == "--micro") e.micro_json = next();
    else if (a == "--git-rev") e.git_rev = next();
    else if (a == "--pool-size") e.pool_size = std::atoi(next().c_str());
    else if (a == "--ws") {
      std::stringstream in(next());
      std::string w;
      while (std::getline(in, w, ',')) e.ws.push_back(std::atoi(w.c_str()));
    } else if (a == "--only") {
      for (char c : next()) e.only.insert(static_cast<char>(std::toupper(c)));
    } else {
      throw std::runtime_error("unknown argument " + a);
    }
  }
  if (e.port <= 0)
    throw std::runtime_error(
        "usage: fairlock_bench run --port P [--smoke] [--json F] [--md F] "
        "[--chart-data DIR] [--micro F] [--only ABCDEFG]");
  if (e.chart_dir.empty()) e.chart_dir = "/tmp";
  char self[4096];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) throw std::runtime_error("readlink /proc/self/exe failed");
  self[n] = '\0';
  e.exe = self;
  e.chart_dir += "/";
  if (e.smoke) e.pings = 100;
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::signal(sig, on_fatal_signal);
  ::signal(SIGPIPE, SIG_IGN);

  e.admin = std::make_unique<Redis>(e.host, e.port, 30000);
  e.pinger = std::make_unique<Redis>(e.host, e.port, 5000);
  const std::int64_t t0 = now_ns();
  e.out["schema"] = 1;
  e.out["mode"] = e.smoke ? "smoke" : "full";
  e.out["git_rev"] = e.git_rev;
  {
    time_t now = ::time(nullptr);
    char buf[64];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    e.out["date"] = buf;
  }
  e.out["machine"] = machine(e);
  say(fmt("fairlock benchmark (%s) against redis on %s:%d\n", e.smoke ? "smoke" : "full", e.host.c_str(), e.port));

  struct Step {
    char id;
    void (*fn)(Env&);
  };
  const Step steps[] = {{'A', scenario_A}, {'B', scenario_B}, {'C', scenario_C}, {'D', scenario_D},
                        {'E', scenario_E}, {'F', scenario_F}, {'G', scenario_G}};
  for (const auto& s : steps) {
    if (!e.wants(s.id)) continue;
    try {
      s.fn(e);
    } catch (const std::exception& ex) {
      e.fail(fmt("scenario %c: %s", s.id, ex.what()));
    }
  }
  e.admin->cmd({"FLUSHALL"});

  // Targets.
  std::string tg = "\n### Targets\n\n| # | target | measured | |\n|---|---|---|---|\n";
  Json jt = Json::array();
  for (const auto& t : e.targets) {
    tg += fmt("| %s | %s | %s | %s |\n", t.id.c_str(), t.goal.c_str(), t.measured.c_str(),
              t.met ? "met" : ("**missed**" + (t.note.empty() ? std::string() : ": " + t.note)).c_str());
    Json j = Json::object();
    j["id"] = t.id;
    j["target"] = t.goal;
    j["measured"] = t.measured;
    j["met"] = t.met;
    if (!t.note.empty()) j["note"] = t.note;
    jt.push(j);
  }
  e.md += tg;
  e.out["targets"] = jt;
  Json jb = Json::array();
  for (const auto& b : e.broken) jb.push(b);
  e.out["benchmark_errors"] = jb;
  e.out["duration_s"] = static_cast<double>(now_ns() - t0) / 1e9;
  if (!e.micro_json.empty()) {
    std::string micro = read_file(e.micro_json);
    if (!micro.empty() && micro.find('{') != std::string::npos) e.out["google_benchmark"] = Json::raw(micro);
  }
  const Json& mach = e.out["machine"];
  (void)mach;
  std::string header = fmt("Run %s (%s mode, %.0f s).\n", e.out["date"].dump().c_str(), e.smoke ? "smoke" : "full",
                           static_cast<double>(now_ns() - t0) / 1e9);
  std::printf("\n%s%s\n", header.c_str(), e.md.c_str());
  write_text(e.json_path, e.out.dump(1) + "\n");
  write_text(e.md_path, e.md);
  for (const auto& [file, text] : e.dat) write_text(e.chart_dir + file, text);
  if (!e.broken.empty()) {
    std::fprintf(stderr, "\n%zu benchmark error(s):\n", e.broken.size());
    for (const auto& b : e.broken) std::fprintf(stderr, "  %s\n", b.c_str());
    return 1;
  }
  return 0;
}

}  // namespace fbench
