// F. Heartbeat cost: one process hosting N waiters on one name or on N
// names; its round trips, commands and script time per heartbeat interval.
#include <fairlock/fairlock.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <memory>
#include <thread>

#include "core/session.h"
#include "harness.h"
#include "scenarios.h"
#include "systems.h"

namespace fbench {
namespace {

// Each of `nnames` names held by an entry with a long lease.
bool hold_names(Env& e, int nnames) {
  Redis c(e.host, e.port);
  std::vector<std::vector<std::string>> holds;
  for (int i = 0; i < nnames; ++i) {
    RawKeys k("fairlock", fmt("bench:F:%d", i));
    holds.push_back(raw_acquire_argv(k, fake_member('n', 0xf00dULL, static_cast<std::uint64_t>(i) + 1, 600000), 1,
                                     600000, 600000, 'f'));
  }
  for (auto& r : c.pipeline(holds)) {
    if (r->type != REDIS_REPLY_ARRAY || reply_int(r->element[0]) != 1) {
      e.fail("F: holder not granted: " + reply_text(r.get()));
      return false;
    }
  }
  return true;
}

// N threads of one client, each waiting on lock(): the names are held.
class Waiters {
 public:
  Waiters(const Waiters&) = delete;  // owns its threads
  Waiters& operator=(const Waiters&) = delete;
  Waiters(Env& e, int n, int nnames, int liveness_ms) : n_(n) {
    fairlock::Options o;
    o.url = e.url();
    o.liveness_ttl = std::chrono::milliseconds(liveness_ms);
    client_ = std::make_unique<fairlock::Client>(o);
    for (int i = 0; i < n; ++i) {
      locks_.push_back(std::make_unique<fairlock::FairLock>(*client_, fmt("bench:F:%d", i % nnames)));
    }
    for (int i = 0; i < n; ++i) ts_.emplace_back([this, i] { wait_on(i); });
  }
  ~Waiters() {
    for (auto& th : ts_) th.join();
  }
  fairlock::Stats stats() const { return client_->stats(); }
  // Until every thread waits (at most 30 s); false if one does not.
  bool all_waiting() const {
    const std::int64_t ready_by = now_ns() + 30000 * kMs;
    while (stats().waits < static_cast<std::uint64_t>(n_) && now_ns() < ready_by) sleep_ns(10 * kMs);
    return stats().waits >= static_cast<std::uint64_t>(n_);
  }
  // Cancels every wait (bounded: 30 s); false if a thread did not leave.
  bool leave() {
    const std::int64_t give_up = now_ns() + 30000 * kMs;
    while (finished_.load() < n_ && now_ns() < give_up) {
      for (auto& l : locks_) l->cancel();
      sleep_ns(20 * kMs);
    }
    return finished_.load() >= n_;
  }
  int granted() const { return granted_.load(); }

 private:
  void wait_on(int i) {
    try {
      locks_[static_cast<std::size_t>(i)]->lock();
      granted_++;
      locks_[static_cast<std::size_t>(i)]->unlock();
    } catch (const std::exception&) {
    }
    finished_++;
  }
  int n_;
  std::unique_ptr<fairlock::Client> client_;
  std::vector<std::unique_ptr<fairlock::FairLock>> locks_;
  std::vector<std::thread> ts_;
  std::atomic<int> finished_{0}, granted_{0};
};

// What one process did over the measured heartbeat intervals.
struct Interval {
  double iv = 0, timer = 0;  // heartbeats (= intervals), timer re-checks
  ServerDelta d;
};

Interval measure_intervals(Env& e, const Waiters& w, int liveness_ms, int intervals) {
  sleep_ns(static_cast<std::int64_t>(liveness_ms) * kMs);  // settle: every waiter past its first acquire
  fairlock::Stats st0 = w.stats();
  ServerSnap s0 = snapshot(*e.admin);
  sleep_ns(static_cast<std::int64_t>(intervals) * liveness_ms / 3 * kMs);
  ServerSnap s1 = snapshot(*e.admin);
  fairlock::Stats st1 = w.stats();
  Interval x;
  x.d = delta(s0, s1);
  x.iv = static_cast<double>(st1.heartbeats - st0.heartbeats);
  x.timer = static_cast<double>(st1.wakes_timer - st0.wakes_timer);
  return x;
}

// The heartbeat pipelines its script calls into one round trip: one per name,
// or one per kBeatCallSize waiters of a name with more. Every other
// top-level command is a round trip of its own.
double round_trips(const Interval& x, int nwaiters, int nnames) {
  const auto per_name = static_cast<std::size_t>(nwaiters / nnames);
  const std::size_t calls_per_name =
      (per_name + fairlock::detail::Heartbeat::kBeatCallSize - 1) / fairlock::detail::Heartbeat::kBeatCallSize;
  const double hb_calls = x.iv * nnames * static_cast<double>(calls_per_name);
  const double other = static_cast<double>(x.d.top_level - x.d.script_calls) +
                       std::max(0.0, static_cast<double>(x.d.script_calls) - hb_calls);
  return x.iv > 0 ? (x.iv + other) / x.iv : NAN;
}

struct F {
  int liveness_ms = 0, intervals = 0;
  Json jf = Json::object();
  double worst_rt = 0;
  std::string rt_list;
};

void report_config(Env& e, F& f, int N, int nnames, const Interval& x) {
  const double rt_iv = round_trips(x, N, nnames);
  const double iv = x.iv;
  const ServerDelta& d = x.d;
  f.worst_rt = std::max(f.worst_rt, rt_iv);
  f.rt_list += fmt("%s%d waiter%s/%d name%s: %.1f", f.rt_list.empty() ? "" : "; ", N, N == 1 ? "" : "s", nnames,
                   nnames == 1 ? "" : "s", rt_iv);
  const double script_calls = iv > 0 ? static_cast<double>(d.script_calls) / iv : NAN;
  const double cmds = iv > 0 ? static_cast<double>(d.commands) / iv : NAN;
  const double timer = iv > 0 ? x.timer / iv : NAN;
  const double script_us = iv > 0 ? static_cast<double>(d.script_usec) / iv : NAN;
  Json j = Json::object();
  j["waiters"] = N;
  j["names"] = nnames;
  j["heartbeat_intervals"] = iv;
  j["round_trips_per_interval"] = rt_iv;
  j["heartbeat_round_trips_per_interval"] = 1.0;
  j["commands_per_interval"] = cmds;
  j["script_calls_per_interval"] = script_calls;
  j["timer_rechecks_per_interval"] = timer;
  j["redis_cpu_us_per_interval"] = iv > 0 ? d.cpu_us / iv : NAN;
  j["script_us_per_interval"] = script_us;
  Json jc = Json::object();
  for (const auto& [k, v] : d.per_command) jc[k] = v;
  j["commands"] = jc;
  f.jf[fmt("%s_N%d", nnames == 1 ? "one_name" : "many_names", N)] = j;
  e.report.md(
      fmt("| %d | %d | %.2f | %.0f | %.0f | %.2f | %.0f |\n", N, nnames, rt_iv, script_calls, cmds, timer, script_us));
  say(
      fmt("  %4d waiters on %4d names: %.0f intervals, %.1f round trips/interval, %.0f cmds/interval, %.1f "
          "timer re-checks/interval\n",
          N, nnames, iv, rt_iv, cmds, timer));
}

// N waiters on `nnames` names (1 or N); false if the scenario cannot go on.
bool run_config(Env& e, F& f, int N, int nnames) {
  flushall(e);
  if (!hold_names(e, nnames)) return false;
  Waiters w(e, N, nnames, f.liveness_ms);
  if (!w.all_waiting()) e.fail(fmt("F: only %llu of %d waiting", static_cast<unsigned long long>(w.stats().waits), N));
  const Interval x = measure_intervals(e, w, f.liveness_ms, f.intervals);
  if (!w.leave()) {
    e.fail("F: waiters did not leave");
    kill_workers_and_exit(5);
  }
  if (w.granted() > 0) e.fail("F: a waiter was granted a held lock");
  report_config(e, f, N, nnames, x);
  return true;
}

}  // namespace

void scenario_F(Env& e) {
  say("\n== F. Heartbeat cost\n");
  const std::vector<int> sizes = e.smoke ? std::vector<int>{1, 10} : std::vector<int>{1, 100, 1000};
  F f;
  f.liveness_ms = e.smoke ? 300 : 1500;  // heartbeat period = liveness / 3
  f.intervals = e.smoke ? 4 : 8;
  f.jf["liveness_ttl_ms"] = f.liveness_ms;
  e.report.section(fmt("F. Heartbeat cost: one process hosting N waiters (liveness_ttl %d ms, heartbeat every %d ms)",
                       f.liveness_ms, f.liveness_ms / 3),
                   "The lock is held by an entry with a long lease, so the waiters only wait. Per heartbeat "
                   "interval, for the whole process:\n\n");
  e.report.table({"waiters", "names", "round trips", "script calls (FCALL)", "Redis cmds (inside scripts included)",
                  "acquire re-checks (timer wake-ups)", "script time µs"},
                 "rrrrrrr");
  for (int many = 0; many < 2; ++many) {
    for (int N : sizes) {
      if (many == 1 && N == 1) continue;
      if (!run_config(e, f, N, many == 0 ? 1 : N)) return;
    }
  }
  e.report.out["F_heartbeat"] = f.jf;
  e.report.target("F", "one round trip per heartbeat interval per process, whatever the number of waiters",
                  fmt("worst %.1f (%s)", f.worst_rt, f.rt_list.c_str()), f.worst_rt <= 1.05,
                  f.worst_rt <= 1.05 ? "" : "waiters made round trips of their own between heartbeats");
}

}  // namespace fbench
