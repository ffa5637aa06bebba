// H. Asynchronous waits (lock_async), in the driver's own process. 1: N
// waiters of one client on one held lock: the process's threads, the
// client's memory per waiter, the time to queue them, then the drain (each
// callback releases): grants/s and whether the grants follow the lock_async
// calls' order. 2: W participants on one lock, W threads in lock() against
// W locks of one client whose callbacks release and call lock_async again,
// in alternating rounds: the ratios async / blocking.
#include <fairlock/fairlock.h>
#include <malloc.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

#include "harness.h"
#include "scenarios.h"
#include "systems.h"

namespace fbench {
namespace {

// ------------------------------------------------------------ the process

int thread_count() {
  int n = 0;
  for ([[maybe_unused]] const auto& task : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

double rss_bytes() {
  std::ifstream statm("/proc/self/statm");
  long long size = 0, resident = 0;
  statm >> size >> resident;
  return static_cast<double>(resident) * static_cast<double>(::sysconf(_SC_PAGESIZE));
}

// The bytes malloc has handed out and not got back (NaN without glibc's
// mallinfo2): unlike the RSS, blind to freed memory being reused.
double heap_bytes() {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 33)
  const struct mallinfo2 m = ::mallinfo2();
  return static_cast<double>(m.uordblks + m.hblkhd);
#else
  return NAN;
#endif
}

// The process's memory: resident, and malloc's bytes in use.
struct Memory {
  double rss = NAN, heap = NAN;
};

Memory memory_now() { return {rss_bytes(), heap_bytes()}; }

Memory per_waiter(const Memory& from, const Memory& to, int n) {
  return {(to.rss - from.rss) / n, (to.heap - from.heap) / n};
}

// Polls `done()` every millisecond for at most `timeout_ms`; whether it came true.
template <typename Done>
bool poll_until(Done done, int timeout_ms) {
  const std::int64_t give_up = now_ns() + timeout_ms * kMs;
  while (!done()) {
    if (now_ns() > give_up) return false;
    sleep_ns(kMs);
  }
  return true;
}

// One client and its locks on one name. The client is shut down before the
// locks go, so no callback runs on a lock that is gone.
class Locks {
 public:
  Locks(Env& e, std::string name, std::size_t capacity,
        std::chrono::milliseconds liveness_ttl = fairlock::Options().liveness_ttl)
      : name_(std::move(name)) {
    fairlock::Options o;
    o.url = e.url();
    o.liveness_ttl = liveness_ttl;
    client_ = std::make_unique<fairlock::Client>(o);
    locks_.reserve(capacity);
  }
  ~Locks() { client_->shutdown(); }
  Locks(const Locks&) = delete;
  Locks& operator=(const Locks&) = delete;

  void add(int n) {
    for (int i = 0; i < n; ++i) locks_.push_back(std::make_unique<fairlock::FairLock>(*client_, name_));
  }
  fairlock::FairLock& operator[](int i) { return *locks_[static_cast<std::size_t>(i)]; }
  int size() const { return static_cast<int>(locks_.size()); }
  const std::string& name() const { return name_; }
  fairlock::Stats stats() const { return client_->stats(); }

 private:
  std::string name_;
  std::unique_ptr<fairlock::Client> client_;
  std::vector<std::unique_ptr<fairlock::FairLock>> locks_;
};

// ------------------------------------------------------------ 1. N waiters

// What one waiter's callback saw: its place among the callbacks, its fence.
struct Grant {
  long long order = -1;  // -1: not granted
  std::uint64_t fence = 0;
};

// Lock 0 holds the name; waiter i is lock i + 1 and calls lock_async i-th.
class Crowd {
 public:
  Crowd(Env& e, int n, std::chrono::milliseconds liveness_ttl)
      : n_(n), grants_(static_cast<std::size_t>(n)), locks_(e, "bench:H:crowd", grants_.size() + 1, liveness_ttl) {
    locks_.add(1);
    locks_[0].lock();
  }
  void create_waiters() { locks_.add(n_); }
  void call_lock_async() {
    for (int i = 0; i < n_; ++i) waiter(i).lock_async([this, i](const fairlock::AcquireResult& r) { on_done(i, r); });
  }
  // Waiters in Redis's queue (ZCARD).
  long long queued(Env& e) const {
    return reply_int(e.admin->cmd({"ZCARD", RawKeys("fairlock", locks_.name()).q}).get());
  }
  // Waiters whose "queued" reply the client has taken in (Stats::waits).
  long long confirmed() const { return static_cast<long long>(locks_.stats().waits); }
  std::uint64_t heartbeats() const { return locks_.stats().heartbeats; }
  void release_holder() { locks_[0].unlock(); }
  bool drained(int timeout_ms) const {
    return poll_until([this] { return done_.load() == n_; }, timeout_ms);
  }
  int done() const { return done_.load(); }
  std::int64_t last_callback_ns() const { return last_ns_.load(); }
  long long failures() const { return failures_.load(); }
  const std::vector<Grant>& grants() const { return grants_; }

 private:
  fairlock::FairLock& waiter(int i) { return locks_[i + 1]; }
  void on_done(int i, const fairlock::AcquireResult& r) {
    if (r.granted()) {
      grants_[static_cast<std::size_t>(i)] = {order_++, r.fence()};
      if (waiter(i).release() != fairlock::Released::released) ++failures_;
    } else {
      ++failures_;
    }
    last_ns_.store(now_ns());
    ++done_;
  }
  int n_;
  std::vector<Grant> grants_;
  std::atomic<long long> order_{0}, failures_{0};
  std::atomic<int> done_{0};
  std::atomic<std::int64_t> last_ns_{0};
  Locks locks_;  // goes first: no callback runs after it
};

// Grants, in callback order, made while a waiter that called lock_async
// earlier was still waiting (or never got it).
long long overtakes(const std::vector<Grant>& grants) {
  const std::size_t n = grants.size();
  std::vector<long long> caller_by_order(n, -1);
  for (std::size_t i = 0; i < n; ++i) {
    if (grants[i].order >= 0) caller_by_order[static_cast<std::size_t>(grants[i].order)] = static_cast<long long>(i);
  }
  std::vector<bool> granted(n, false);
  std::size_t first_waiting = 0;
  long long count = 0;
  for (long long caller : caller_by_order) {
    if (caller < 0) break;
    if (static_cast<std::size_t>(caller) != first_waiting) ++count;
    granted[static_cast<std::size_t>(caller)] = true;
    while (first_waiting < n && granted[first_waiting]) ++first_waiting;
  }
  return count;
}

// Granted waiters whose fence is not above the previous granted caller's.
long long fence_inversions(const std::vector<Grant>& grants) {
  long long count = 0;
  std::uint64_t last = 0;
  for (const Grant& g : grants) {
    if (g.order < 0) continue;
    if (g.fence <= last) ++count;
    last = g.fence;
  }
  return count;
}

struct CrowdFigures {
  int n = 0, threads_before = 0, threads_queued = 0;
  std::chrono::milliseconds liveness_ttl{0};
  Memory before;           // the process, before the waiters were created
  Memory queued, settled;  // per waiter: when all are queued; 2 × liveness_ttl later
  long long settle_heartbeats = 0;
  double calls_ms = NAN, queued_ms = NAN, drain_grants_per_s = NAN;
  long long overtakes = 0, inversions = 0, failures = 0;
};

// Every waiter created and its lock_async called, until Redis has them all
// queued and the client has every reply; the threads and memory then.
bool queue_crowd(Env& e, Crowd& c, CrowdFigures& f) {
  f.before = memory_now();
  c.create_waiters();
  const std::int64_t t0 = now_ns();
  c.call_lock_async();
  f.calls_ms = static_cast<double>(now_ns() - t0) / 1e6;
  if (!poll_until([&] { return c.confirmed() >= f.n && c.queued(e) >= f.n; }, 60000)) {
    e.fail(fmt("H: after 60 s, %lld of %d asynchronous waiters queued in Redis, %lld confirmed to the client",
               c.queued(e), f.n, c.confirmed()));
    return false;
  }
  f.queued_ms = static_cast<double>(now_ns() - t0) / 1e6;
  f.threads_queued = thread_count();
  f.queued = per_waiter(f.before, memory_now(), f.n);
  return true;
}

// The waiters wait on for 2 × liveness_ttl, through several heartbeats (the
// first ones add memory of their own); the memory per waiter then.
void settle_crowd(const Crowd& c, CrowdFigures& f) {
  const std::uint64_t beats = c.heartbeats();
  sleep_ns(2 * f.liveness_ttl.count() * kMs);
  f.settle_heartbeats = static_cast<long long>(c.heartbeats() - beats);
  f.settled = per_waiter(f.before, memory_now(), f.n);
}

void drain_crowd(Env& e, Crowd& c, CrowdFigures& f) {
  const std::int64_t t0 = now_ns();
  c.release_holder();
  if (!c.drained(120000)) {
    e.fail(fmt("H: the drain of %d asynchronous waiters did not end in 120 s", f.n));
    f.failures = f.n - c.done();
    return;
  }
  f.drain_grants_per_s = f.n / (static_cast<double>(c.last_callback_ns() - t0) / 1e9);
  f.overtakes = overtakes(c.grants());
  f.inversions = fence_inversions(c.grants());
  f.failures = c.failures();
  if (f.failures > 0) e.fail(fmt("H: %lld asynchronous waiters not granted or not released", f.failures));
}

CrowdFigures run_crowd(Env& e, int n, std::chrono::milliseconds liveness_ttl) {
  CrowdFigures f;
  f.n = n;
  f.liveness_ttl = liveness_ttl;
  f.threads_before = thread_count();
  Crowd c(e, n, liveness_ttl);
  if (queue_crowd(e, c, f)) {
    settle_crowd(c, f);
    drain_crowd(e, c, f);
  } else {
    f.failures = n;
  }
  say(
      fmt("  %d waiters: threads %d -> %d, queued in %.0f ms; per waiter %.0f B RSS (%.0f B heap), %.0f B (%.0f B) "
          "%.0f s later; drain %.0f grants/s, %lld overtakes\n",
          n, f.threads_before, f.threads_queued, f.queued_ms, f.queued.rss, f.queued.heap, f.settled.rss,
          f.settled.heap, 2 * static_cast<double>(f.liveness_ttl.count()) / 1000, f.drain_grants_per_s, f.overtakes));
  return f;
}

// ------------------------------------------------------------ 2. async against blocking

// The grants of one round's window and the handoffs among them: a handoff
// is one participant's "about to release" → another's "granted".
class Baton {
 public:
  Baton(std::int64_t go, std::int64_t stop) : go_(go), stop_(stop) {}
  bool running() const { return now_ns() < stop_; }
  void releasing(int who) {
    std::lock_guard<std::mutex> lk(mu_);
    released_at_ = now_ns();
    released_by_ = who;
  }
  void granted(int who) {
    const std::int64_t t = now_ns();
    std::lock_guard<std::mutex> lk(mu_);
    if (t < go_ || t >= stop_) return;
    ++grants_;
    if (released_by_ >= 0 && released_by_ != who) handoff_us_.push_back(static_cast<double>(t - released_at_) / 1e3);
  }
  double grants_per_s() const { return static_cast<double>(grants_) / (static_cast<double>(stop_ - go_) / 1e9); }
  double handoff_us(double q) const { return quantile(handoff_us_, q); }

 private:
  std::int64_t go_, stop_;
  std::mutex mu_;
  std::int64_t released_at_ = 0;
  int released_by_ = -1;
  long long grants_ = 0;
  std::vector<double> handoff_us_;
};

struct Round {
  double grants_per_s = NAN, p50_us = NAN, p99_us = NAN, round_ping_us = NAN, threads = NAN;
  double grants = NAN, script_calls_per_grant = NAN;  // over the whole round, the participants' leaving included
};

struct Contention {
  int W = 0, dur_ms = 0;
  std::atomic<long long> errors{0};
};

Round round_of(const Baton& b, int threads, const Locks& locks) {
  Round r;
  r.grants = static_cast<double>(locks.stats().grants);
  r.grants_per_s = b.grants_per_s();
  r.p50_us = b.handoff_us(0.5);
  r.p99_us = b.handoff_us(0.99);
  r.threads = threads;
  return r;
}

// Until the participants have left (each leaves at its first grant after
// the window); cancels what still waits after 30 s. A participant that does
// not leave then either would hang the run (as in F: exit at once).
void await_leaving(Env& e, Locks& locks, const std::atomic<int>& left) {
  auto all_left = [&] { return left.load() == locks.size(); };
  if (poll_until(all_left, 30000)) return;
  e.fail(fmt("H: %d of %d participants still waiting 30 s after the window", locks.size() - left.load(), locks.size()));
  for (int i = 0; i < locks.size(); ++i) locks[i].cancel();
  if (poll_until(all_left, 10000)) return;
  e.fail("H: cancelled participants did not leave");
  kill_workers_and_exit(5);
}

// One thread of the blocking variant, from `go` to its first grant after the window.
void contend_blocking(fairlock::FairLock& lock, int who, std::int64_t go, Baton& b, Contention& c) {
  sleep_until_ns(go);
  try {
    while (b.running()) {
      lock.lock();
      b.granted(who);
      b.releasing(who);
      lock.unlock();
    }
  } catch (const std::exception&) {
    ++c.errors;
  }
}

// W threads, each with its own lock, looping lock(); unlock().
Round blocking_round(Env& e, Contention& c, const std::string& name) {
  Locks locks(e, name, static_cast<std::size_t>(c.W));
  locks.add(c.W);
  const std::int64_t go = now_ns() + 50 * kMs;
  Baton b(go, go + c.dur_ms * kMs);
  std::atomic<int> left{0};
  std::vector<std::thread> ts;
  for (int i = 0; i < c.W; ++i) {
    ts.emplace_back([&, i] {
      contend_blocking(locks[i], i, go, b, c);
      ++left;
    });
  }
  sleep_until_ns(go + c.dur_ms * kMs / 2);
  const int threads = thread_count();
  await_leaving(e, locks, left);
  for (auto& t : ts) t.join();
  return round_of(b, threads, locks);
}

// W locks of one client: each callback releases and calls lock_async again,
// until the window is over. No thread of its own.
class AsyncLoop {
 public:
  AsyncLoop(Locks& locks, Baton& b, Contention& c) : locks_(locks), b_(b), c_(c) {}
  void start() {
    for (int i = 0; i < locks_.size(); ++i) again(i);
  }
  const std::atomic<int>& left() const { return left_; }

 private:
  void again(int i) {
    try {
      locks_[i].lock_async([this, i](const fairlock::AcquireResult& r) { on_done(i, r); });
    } catch (const std::exception&) {
      ++c_.errors;
      ++left_;
    }
  }
  void on_done(int i, const fairlock::AcquireResult& r) {
    if (!r.granted()) {
      ++c_.errors;
      ++left_;
      return;
    }
    b_.granted(i);
    b_.releasing(i);
    if (locks_[i].release() != fairlock::Released::released) ++c_.errors;
    if (b_.running()) {
      again(i);
    } else {
      ++left_;
    }
  }
  Locks& locks_;
  Baton& b_;
  Contention& c_;
  std::atomic<int> left_{0};
};

Round async_round(Env& e, Contention& c, const std::string& name) {
  Locks locks(e, name, static_cast<std::size_t>(c.W));
  locks.add(c.W);
  const std::int64_t go = now_ns() + 50 * kMs;
  Baton b(go, go + c.dur_ms * kMs);
  AsyncLoop loop(locks, b, c);
  sleep_until_ns(go);
  loop.start();
  sleep_until_ns(go + c.dur_ms * kMs / 2);
  const int threads = thread_count();
  await_leaving(e, locks, loop.left());
  return round_of(b, threads, locks);
}

// One round of either variant, with PINGs right before and after it (raw
// data; the unit is the run's RTT reference) and the server's script calls
// (FCALL, EVALSHA) over it.
Round round(Env& e, Contention& c, bool async, int r) {
  std::vector<double> ping = ping_us(e, e.pings);
  const std::string name = fmt("bench:H:%s:%d", async ? "async" : "blocking", r);
  const ServerSnap s0 = snapshot(*e.admin);
  Round x = async ? async_round(e, c, name) : blocking_round(e, c, name);
  x.script_calls_per_grant = static_cast<double>(delta(s0, snapshot(*e.admin)).script_calls) / x.grants;
  const std::vector<double> post = ping_us(e, e.pings);
  ping.insert(ping.end(), post.begin(), post.end());
  x.round_ping_us = median(ping);
  say(fmt("  %-8s W=%d: %7.0f grants/s, handoff p50 %s us p99 %s us, %.0f threads, PING %.0f us\n",
          async ? "async" : "blocking", c.W, x.grants_per_s, num(x.p50_us, 0).c_str(), num(x.p99_us, 0).c_str(),
          x.threads, x.round_ping_us));
  return x;
}

// One variant's rounds: the median of a figure over them.
double med(const std::vector<Round>& rounds, double Round::*figure) {
  std::vector<double> v;
  for (const Round& r : rounds) v.push_back(r.*figure);
  return median(v);
}

// The rounds of both variants, run alternately.
struct Rounds {
  int W = 0, count = 0, dur_ms = 0;
  std::vector<Round> blocking, async;
};

Rounds run_contention(Env& e, Contention& c, int count) {
  Rounds x;
  x.W = c.W;
  x.count = count;
  x.dur_ms = c.dur_ms;
  for (int r = 0; r < count; ++r) {
    for (int k = 0; k < 2; ++k) {
      const bool async = (k == 0) == (r % 2 == 1);
      (async ? x.async : x.blocking).push_back(round(e, c, async, r));
    }
  }
  if (c.errors.load() > 0) e.fail(fmt("H: %lld errors in the W=%d rounds", c.errors.load(), c.W));
  return x;
}

// ------------------------------------------------------------ the report

std::string memory_cell(const Memory& m) { return fmt("%s B / %s B", num(m.rss, 0).c_str(), num(m.heap, 0).c_str()); }

void report_crowd(Env& e, const CrowdFigures& f) {
  e.report.md(
      fmt("One lock held; %d FairLock objects of one client call lock_async in a loop. Threads: entries of "
          "/proc/self/task before the client was created and once every waiter is queued (Redis's ZCARD of the queue, "
          "and the "
          "client's Stats::waits). "
          "Memory per waiter: the growth of the RSS (/proc/self/statm) and of malloc's bytes in use (mallinfo2: blind "
          "to freed memory being reused) from before the %d objects were created to all queued, and to %g s later "
          "(2 × the client's liveness_ttl: %lld heartbeats), ÷ %d. Then the holder "
          "releases and each callback releases its lock: grants/s over the drain; overtakes = grants made while a "
          "waiter that called lock_async earlier was still waiting (callback order against call order); fence "
          "inversions = fences not increasing in call order.\n\n",
          f.n, f.n, 2 * static_cast<double>(f.liveness_ttl.count()) / 1000, f.settle_heartbeats, f.n));
  e.report.table({"waiters", "threads: before the client / all queued", "lock_async calls returned / all queued",
                  "memory per waiter, all queued: RSS / heap", "memory per waiter, settled: RSS / heap",
                  "drain grants/s", "overtakes", "fence inversions", "not granted"},
                 "rrrrrrrrr");
  e.report.md(fmt("| %d | %d / %d | %.0f ms / %.0f ms | %s | %s | %s | %lld | %lld | %lld |\n", f.n, f.threads_before,
                  f.threads_queued, f.calls_ms, f.queued_ms, memory_cell(f.queued).c_str(),
                  memory_cell(f.settled).c_str(), thousands(f.drain_grants_per_s).c_str(), f.overtakes, f.inversions,
                  f.failures));
}

void grants_row(Env& e, const Rounds& x) {
  const double b = med(x.blocking, &Round::grants_per_s), a = med(x.async, &Round::grants_per_s);
  e.report.md(fmt("| grants/s | %s | %s | %.2f |\n", thousands(b).c_str(), thousands(a).c_str(), a / b));
}

void handoff_row(Env& e, const char* what, const Rounds& x, double Round::*figure) {
  const double b = med(x.blocking, figure), a = med(x.async, figure);
  const double rtt = e.rtt.p50;
  e.report.md(
      fmt("| %s | %s | %s | %.2f |\n", what, lat_cell(b, b / rtt).c_str(), lat_cell(a, a / rtt).c_str(), a / b));
}

void report_contention(Env& e, const Rounds& x) {
  e.report.md(
      fmt("\nW = %d on one lock, holding for ~0; medians of %d alternating rounds of %g s per variant. Blocking: "
          "%d threads, each with its own FairLock, looping lock(); unlock(). Async: %d FairLock objects of one client "
          "whose callbacks release and call lock_async again (no thread of their own). Handoff = a participant about "
          "to release → another one granted (lock() returned, or its callback running), on the process's steady "
          "clock, × the run's RTT reference. Script calls per grant: the server's count over the whole "
          "round ÷ the client's grants. Threads: the whole process's, mid-round.\n\n",
          x.W, x.count, x.dur_ms / 1000.0, x.W, x.W));
  e.report.table({"", "blocking", "async", "async / blocking"}, "lrrr");
  grants_row(e, x);
  handoff_row(e, "handoff p50", x, &Round::p50_us);
  handoff_row(e, "handoff p99", x, &Round::p99_us);
  const double eb = med(x.blocking, &Round::script_calls_per_grant), ea = med(x.async, &Round::script_calls_per_grant);
  e.report.md(fmt("| script calls per grant | %.2f | %.2f | %.2f |\n", eb, ea, ea / eb));
  e.report.md(fmt("| threads of the process | %.0f | %.0f | |\n", med(x.blocking, &Round::threads),
                  med(x.async, &Round::threads)));
}

void targets_H(Env& e, const CrowdFigures& f) {
  const bool small = f.settled.rss <= 2048 && !(f.settled.heap > 2048);
  const std::string why =
      e.smoke ? "smoke mode: the client's fixed costs are spread over few waiters"
              : fmt("from all queued to settled (%lld heartbeats, the waiters idle) it grew by %.0f B RSS and "
                    "%.0f B heap per waiter",
                    f.settle_heartbeats, f.settled.rss - f.queued.rss, f.settled.heap - f.queued.heap);
  e.report.target("H1", fmt("client memory ≤ 2 KB per asynchronous waiter (%d waiters, settled)", f.n),
                  fmt("settled: %s B RSS, %s B heap; all queued: %s B, %s B", num(f.settled.rss, 0).c_str(),
                      num(f.settled.heap, 0).c_str(), num(f.queued.rss, 0).c_str(), num(f.queued.heap, 0).c_str()),
                  small, small ? "" : why);
  e.report.target("H2", "asynchronous waiters granted in lock_async call order",
                  fmt("%lld overtakes, %lld fence inversions, %lld not granted", f.overtakes, f.inversions, f.failures),
                  f.overtakes == 0 && f.inversions == 0 && f.failures == 0);
  // The client's heartbeat, wake-subscriber and async threads.
  e.report.target(
      "H3", "no thread per asynchronous waiter",
      fmt("%d threads with %d waiters queued, %d before the client", f.threads_queued, f.n, f.threads_before),
      f.threads_queued > 0 && f.threads_queued <= f.threads_before + 3);
}

Json crowd_json(const CrowdFigures& f) {
  Json j = Json::object();
  j["waiters"] = f.n;
  j["threads_before_client"] = f.threads_before;
  j["threads_all_queued"] = f.threads_queued;
  j["liveness_ttl_ms"] = static_cast<long long>(f.liveness_ttl.count());
  j["rss_bytes_per_waiter_all_queued"] = f.queued.rss;
  j["heap_bytes_per_waiter_all_queued"] = f.queued.heap;
  j["rss_bytes_per_waiter_settled"] = f.settled.rss;
  j["heap_bytes_per_waiter_settled"] = f.settled.heap;
  j["heartbeats_while_settling"] = f.settle_heartbeats;
  j["lock_async_calls_ms"] = f.calls_ms;
  j["all_queued_ms"] = f.queued_ms;
  j["drain_grants_per_s"] = f.drain_grants_per_s;
  j["overtakes"] = f.overtakes;
  j["fence_inversions"] = f.inversions;
  j["not_granted"] = f.failures;
  return j;
}

Json rounds_json(const std::vector<Round>& rounds) {
  Json j = Json::object();
  const std::pair<const char*, double Round::*> figures[] = {{"grants_per_s", &Round::grants_per_s},
                                                             {"handoff_p50_us", &Round::p50_us},
                                                             {"handoff_p99_us", &Round::p99_us},
                                                             {"round_ping_us", &Round::round_ping_us},
                                                             {"script_calls_per_grant", &Round::script_calls_per_grant},
                                                             {"threads", &Round::threads}};
  for (const auto& [key, figure] : figures) j[key] = med(rounds, figure);
  Json per_round = Json::array();
  for (const Round& r : rounds) per_round.push(r.grants_per_s);
  j["grants_per_s_by_round"] = per_round;
  Json ping_by_round = Json::array();
  for (const Round& r : rounds) ping_by_round.push(r.round_ping_us);
  j["round_ping_us_by_round"] = ping_by_round;
  return j;
}

Json contention_json(const Rounds& x, double rtt_ref_us) {
  Json j = Json::object();
  j["W"] = x.W;
  j["rtt_ref_us"] = rtt_ref_us;  // the unit of the table's "×" figures
  j["rounds"] = x.count;
  j["duration_ms"] = x.dur_ms;
  j["blocking"] = rounds_json(x.blocking);
  j["async"] = rounds_json(x.async);
  j["grants_ratio"] = med(x.async, &Round::grants_per_s) / med(x.blocking, &Round::grants_per_s);
  j["handoff_p50_ratio"] = med(x.async, &Round::p50_us) / med(x.blocking, &Round::p50_us);
  j["handoff_p99_ratio"] = med(x.async, &Round::p99_us) / med(x.blocking, &Round::p99_us);
  return j;
}

void report_H(Env& e, const CrowdFigures& f, const Rounds& x) {
  e.report.section(
      fmt("H. Asynchronous waits (lock_async): %d waiters in one process; W = %d, async against blocking", f.n, x.W));
  report_crowd(e, f);
  report_contention(e, x);
  targets_H(e, f);
  Json j = Json::object();
  j["waiters"] = crowd_json(f);
  j["contention"] = contention_json(x, e.rtt.p50);
  e.report.out["H_async"] = j;
}

}  // namespace

void scenario_H(Env& e) {
  const int n = e.smoke ? 1000 : 10000;
  Contention c;
  c.W = e.smoke ? 4 : 16;
  c.dur_ms = e.smoke ? 600 : 3000;
  say(fmt("\n== H. Asynchronous waits: %d waiters in one process; W=%d async against blocking\n", n, c.W));
  flushall(e);
  // Smoke mode: a shorter liveness_ttl, so that settling takes 3 s, not 10.
  const auto liveness_ttl = e.smoke ? std::chrono::milliseconds(1500) : fairlock::Options().liveness_ttl;
  const CrowdFigures f = run_crowd(e, n, liveness_ttl);
  const Rounds x = run_contention(e, c, e.smoke ? 1 : 3);
  report_H(e, f, x);
}

}  // namespace fbench
