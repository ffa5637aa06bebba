// fairlock_fault_worker: one participant process for the fault-injection and
// soak tests. It records every grant it gets to the recorder redis-server (a
// separate, never-faulted instance) so that a parent test can check the whole
// history, including that of workers it SIGKILLed.
//
//   fairlock_fault_worker key=value...
//     url=redis://...    the lock server           rec=PORT   recorder port
//     cacert=FILE        CA file for a rediss:// url
//     ev=KEY             recorder list for events  wid=ID     worker id
//     mode=loop|cmd      random operations for a bounded time, or driven by
//                        stdin commands (lock N, for N MS, try N, unlock N, exit)
//     locks=a,b          lock names                sems=s:3   semaphore names:permits
//     threads=N seconds=S iters=N seed=N
//     lease=MS liveness=MS renew=0|1 notify=publish|keyspace|poll
//     scripts=functions|evalsha   how the client runs the scripts
//     cmd_timeout=MS connect_timeout=MS
//     hold=MIN-MAX for=MIN-MAX cancel=MAX gap=MIN-MAX (ms)
//     long_hold=PCT:MS   a PCT% chance that a hold lasts MS instead
//     ops=lock:4,for:3,try:1,cancel:1   operation weights; also async (lock_async,
//                        its handle or the object cancelled from another thread
//                        at random), asyncfor (lock_async with a deadline) and
//                        future (lock_future with a deadline)
//     sync=N             Options::sync_replicas (N replicas acknowledge each grant)
//     log=FILE           the client's log, debug level and up, to FILE
//     shared=PCT         a PCT% chance that an operation uses the process's one
//                        object for the name, shared by all its threads (a wait
//                        refused there with std::logic_error is outcome "inuse")
//
// Records (RPUSH ev, space separated; t = recorder TIME microseconds,
// m = CLOCK_MONOTONIC microseconds, read in this process):
//   S wid pid cid t
//   G gid wid name permits fence t_call t_start lease_ms owned_at_start op m_start m_owned shared
//   E gid t_end owned_at_end m_end            (right before unlock)
//   U gid result t                            (ok lost conn timeouterr server ...)
//   L gid t                                   (on_lost callback)
//   R wid op name permits t_call t_ret timeout_ms outcome message m_call m_ret
//                                             (m: around a blocking call; else -1)
//   A wait wid name op m_call timeout_ms      (an async wait that was accepted)
//   C wait outcome m                          (each run of its callback; "granted")
//   D wid t grants waits timeouts cancels lost reconnects script_reloads
//     wakes_signal wakes_timer wakes_heartbeat wakes_keyspace heartbeats
//   X wid message                             (an unexpected exception type)
// Validity samples: HSET ev:valid gid "t m", both read before an owns_lock()
// (and fence()) that said the grant was still held, so it was believed at t
// and at m. The same order makes every belief time a lower bound of the
// user's real belief: m_start is read after lock() returned (or first thing
// in the async callback) and before the owns_lock() that confirms it
// (m_owned), m_end before the owns_lock() at the end of the hold.
#include <fairlock/fairlock.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <future>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "support.h"

using namespace fairlock;
using faults::Micros;
using faults::Rec;
using faults::SharedRec;
using std::chrono::milliseconds;

namespace {

struct Range {
  long lo = 0, hi = 0;
};

struct Config {
  std::string url, cacert, ev, wid = "w", mode = "loop", notify = "publish";
  int rec = 0, threads = 1;
  std::vector<std::pair<std::string, std::uint32_t>> names;
  double seconds = 0;
  long iters = 0;
  long lease = 1000, liveness = 900, cmd_timeout = 2000, connect_timeout = 2000;
  Range hold{0, 20}, timeout{5, 200}, gap{0, 5};
  long cancel_max = 50, long_hold_pct = 0, long_hold_ms = 0;
  bool renew = true;
  bool functions = true;
  long shared_pct = 0;
  int sync_replicas = 0;
  std::string log;  // a file for the client's debug log (none: no log)
  unsigned long long seed = 1;
  std::vector<std::pair<std::string, int>> ops{{"lock", 4}, {"for", 3}, {"try", 1}, {"cancel", 1}};
};

Range parse_range(const std::string& v) {
  auto dash = v.find('-');
  Range r;
  r.lo = std::atol(v.substr(0, dash).c_str());
  r.hi = dash == std::string::npos ? r.lo : std::atol(v.substr(dash + 1).c_str());
  return r;
}

Config parse(int argc, char** argv) {
  Config c;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto eq = a.find('=');
    if (eq == std::string::npos) throw std::invalid_argument("bad argument " + a);
    std::string k = a.substr(0, eq), v = a.substr(eq + 1);
    if (k == "url") c.url = v;
    else if (k == "cacert") c.cacert = v;
    else if (k == "rec") c.rec = std::atoi(v.c_str());
    else if (k == "ev") c.ev = v;
    else if (k == "wid") c.wid = v;
    else if (k == "mode") c.mode = v;
    else if (k == "notify") c.notify = v;
    else if (k == "threads") c.threads = std::atoi(v.c_str());
    else if (k == "seconds") c.seconds = std::atof(v.c_str());
    else if (k == "iters") c.iters = std::atol(v.c_str());
    else if (k == "lease") c.lease = std::atol(v.c_str());
    else if (k == "liveness") c.liveness = std::atol(v.c_str());
    else if (k == "log") c.log = v;
    else if (k == "cmd_timeout") c.cmd_timeout = std::atol(v.c_str());
    else if (k == "connect_timeout") c.connect_timeout = std::atol(v.c_str());
    else if (k == "hold") c.hold = parse_range(v);
    else if (k == "for") c.timeout = parse_range(v);
    else if (k == "gap") c.gap = parse_range(v);
    else if (k == "cancel") c.cancel_max = std::atol(v.c_str());
    else if (k == "renew") c.renew = v != "0";
    else if (k == "scripts") c.functions = v != "evalsha";
    else if (k == "shared") c.shared_pct = std::atol(v.c_str());
    else if (k == "sync") c.sync_replicas = std::atoi(v.c_str());
    else if (k == "seed") c.seed = std::strtoull(v.c_str(), nullptr, 10);
    else if (k == "long_hold") {
      auto colon = v.find(':');
      c.long_hold_pct = std::atol(v.substr(0, colon).c_str());
      c.long_hold_ms = std::atol(v.substr(colon + 1).c_str());
    } else if (k == "locks") {
      for (auto& n : faults::split(v, ','))
        if (!n.empty()) c.names.emplace_back(n, 1);
    } else if (k == "sems") {
      for (auto& n : faults::split(v, ',')) {
        auto colon = n.rfind(':');
        if (colon == std::string::npos) throw std::invalid_argument("sems=name:permits");
        c.names.emplace_back(n.substr(0, colon), std::atoi(n.substr(colon + 1).c_str()));
      }
    } else if (k == "ops") {
      c.ops.clear();
      for (auto& o : faults::split(v, ',')) {
        auto colon = o.find(':');
        c.ops.emplace_back(o.substr(0, colon), colon == std::string::npos ? 1 : std::atoi(o.substr(colon + 1).c_str()));
      }
    } else {
      throw std::invalid_argument("unknown key " + k);
    }
  }
  if (c.url.empty() || c.rec == 0 || c.ev.empty()) throw std::invalid_argument("url=, rec= and ev= are required");
  return c;
}

std::string clean(std::string s) {
  for (auto& ch : s) {
    if (ch == ' ' || ch == '\n' || ch == '\r') ch = '_';
  }
  if (s.size() > 300) s.resize(300);
  return s.empty() ? "-" : s;
}

// The outcome kind of a release, named as the checker reads it.
std::string release_kind(Released r) {
  switch (r) {
    case Released::released: return "ok";
    case Released::lost: return "lost";
    case Released::not_held: return "notheld";
    case Released::failed: return "conn";  // redis unreachable: the grant runs out with its lease
  }
  return "?";
}

// The outcome kind of the exception `e`, and its message unless
// `read_message` is false: a lock_future's error is shared with the
// library's async thread, which may drop the last reference to it; reading
// what() on another thread is then a race in ThreadSanitizer's eyes (the
// count in libstdc++'s exception_ptr is not instrumented), so the future's
// outcome goes by type alone.
std::string kind_of(const std::exception_ptr& e, std::string& msg, bool read_message = true) {
  auto text = [&](const std::exception& x) { msg = read_message ? x.what() : "-"; };
  try {
    std::rethrow_exception(e);
  } catch (const Cancelled& x) {
    text(x);
    return "cancelled";
  } catch (const NotReplicatedError& x) {
    text(x);
    return "notrepl";
  } catch (const PermitsMismatch& x) {
    text(x);
    return "permits";
  } catch (const ConnectionError& x) {
    text(x);
    return "conn";
  } catch (const TimeoutError& x) {
    text(x);
    return "timeouterr";
  } catch (const ServerError& x) {
    text(x);
    return "server";
  } catch (const Error& x) {
    text(x);
    return "error";
  } catch (const std::logic_error& x) {
    text(x);
    return "LOGIC";
  } catch (const std::exception& x) {
    text(x);
    return "OTHER";
  } catch (...) {
    msg = "?";
    return "OTHER";
  }
}

bool unexpected_kind(const std::string& k) { return k == "LOGIC" || k == "OTHER" || k == "error" || k == "notheld"; }

// The grant id a participant currently holds, for its on_lost callback.
struct Slot {
  std::mutex mu;
  std::string gid;
  void set(const std::string& g) {
    std::lock_guard<std::mutex> lk(mu);
    gid = g;
  }
  std::string get() {
    std::lock_guard<std::mutex> lk(mu);
    return gid;
  }
};

struct Participant {
  std::string name;
  std::uint32_t permits;
  bool shared = false;  // the process's one object for the name, used by every thread
  std::shared_ptr<Slot> slot;
  std::shared_ptr<FairSemaphore> sem;
};

// How one wait ended, as the waiting thread learned it.
struct Attempt {
  bool granted = false;
  std::uint64_t fence = 0;
  std::string outcome, msg;
  Micros m_learn = -1;             // CLOCK_MONOTONIC when the user learned the grant
  bool m_owned = false;            // owns_lock() (and the fence) confirmed it after m_learn
  Micros m_call = -1, m_ret = -1;  // CLOCK_MONOTONIC around a blocking call
};

// An asynchronous wait's result, handed from its callback to the waiting thread.
struct AsyncWait {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  Attempt a;
};

using Rng = std::function<long(long, long)>;

// True while `sem` holds the grant with `fence` (read after the caller's clock).
bool believes(FairSemaphore& sem, std::uint64_t fence) { return sem.owns_lock() && sem.fence() == fence; }

// The outcome of a wait that threw: a refused wait on a shared object is "inuse".
std::string failed_kind(const Participant& p, const std::exception_ptr& e, std::string& msg) {
  std::string kind = kind_of(e, msg);
  return kind == "LOGIC" && p.shared ? "inuse" : kind;
}

// A debug-level logger writing to `path` (not registered: Options::logger).
std::shared_ptr<spdlog::logger> file_logger(const std::string& path) {
  auto log = std::make_shared<spdlog::logger>("fairlock", std::make_shared<spdlog::sinks::basic_file_sink_mt>(path));
  log->set_level(spdlog::level::debug);
  log->flush_on(spdlog::level::debug);
  return log;
}

class Worker {
 public:
  explicit Worker(const Config& cfg) : cfg_(cfg), shared_(cfg.rec) {
    Options o;
    o.url = cfg.url;
    o.tls.ca_file = cfg.cacert;
    o.liveness_ttl = milliseconds(cfg.liveness);
    o.command_timeout = milliseconds(cfg.cmd_timeout);
    o.connect_timeout = milliseconds(cfg.connect_timeout);
    o.notify = cfg.notify == "poll" ? Notify::poll : cfg.notify == "keyspace" ? Notify::keyspace : Notify::publish;
    o.configure_keyspace_events = true;
    o.use_functions = cfg.functions;
    o.sync_replicas = cfg.sync_replicas;
    if (!cfg.log.empty()) o.logger = file_logger(cfg.log);
    client_ = std::make_unique<Client>(o);
    shared_.rpush(cfg.ev, "S " + cfg.wid + " " + std::to_string(::getpid()) + " " + client_->id() + " " +
                              std::to_string(shared_.time_us()));
    if (cfg.shared_pct > 0) {
      for (auto& [name, permits] : cfg.names) shared_ps_.push_back(make(name, permits, true));
    }
  }

  Participant make(const std::string& name, std::uint32_t permits, bool shared = false) {
    Participant p;
    p.name = name;
    p.permits = permits;
    p.shared = shared;
    p.slot = std::make_shared<Slot>();
    LockOptions lo;
    lo.lease = milliseconds(cfg_.lease);
    lo.auto_renew = cfg_.renew;
    auto slot = p.slot;
    SharedRec* shared_rec = &shared_;
    std::string ev = cfg_.ev;
    lo.on_lost = [slot, shared_rec, ev] {
      std::string g = slot->get();
      if (!g.empty()) shared_rec->rpush(ev, "L " + g + " " + std::to_string(shared_rec->time_us()));
    };
    p.sem = std::make_shared<FairSemaphore>(*client_, name, permits, lo);
    return p;
  }

  std::string next_gid(int tid) { return cfg_.wid + "." + std::to_string(tid) + "." + std::to_string(++gids_); }

  // What a blocking call that returned a grant lets the user believe.
  static Attempt learned_now(Participant& p) {
    Attempt a;
    a.granted = true;
    a.m_learn = faults::mono_us();
    a.fence = p.sem->fence();
    a.m_owned = believes(*p.sem, a.fence);
    return a;
  }

  // Records a grant the user just learned (`a`). Returns its id.
  std::string on_granted(Rec& rec, int tid, Participant& p, Micros t_call, const std::string& op, const Attempt& a) {
    Micros t_start = rec.time_us();
    bool owned = believes(*p.sem, a.fence);
    std::string gid = next_gid(tid);
    p.slot->set(gid);
    rec.rpush(cfg_.ev, "G " + gid + " " + cfg_.wid + " " + p.name + " " + std::to_string(p.permits) + " " +
                           std::to_string(a.fence) + " " + std::to_string(t_call) + " " + std::to_string(t_start) +
                           " " + std::to_string(cfg_.lease) + " " + (owned ? "1" : "0") + " " + op + " " +
                           std::to_string(a.m_learn) + " " + (a.m_owned ? "1" : "0") + " " + (p.shared ? "1" : "0"));
    return gid;
  }

  void sample(Rec& rec, const std::string& gid, Participant& p, std::uint64_t fence) {
    Micros t = rec.time_us();
    Micros m = faults::mono_us();
    if (believes(*p.sem, fence)) rec.hset(cfg_.ev + ":valid", gid, std::to_string(t) + " " + std::to_string(m));
  }

  // Records the end of a hold, unlocks, records the result. Returns it.
  std::string finish(Rec& rec, const std::string& gid, Participant& p, std::uint64_t fence) {
    Micros t_end = rec.time_us();
    Micros m_end = faults::mono_us();
    bool owned = believes(*p.sem, fence);
    rec.rpush(cfg_.ev,
              "E " + gid + " " + std::to_string(t_end) + " " + (owned ? "1" : "0") + " " + std::to_string(m_end));
    std::string result = release_kind(p.sem->release());
    p.slot->set("");
    rec.rpush(cfg_.ev, "U " + gid + " " + result + " " + std::to_string(rec.time_us()));
    return result;
  }

  void returned(Rec& rec, const std::string& op, const Participant& p, Micros t_call, long timeout_ms,
                const Attempt& a) {
    rec.rpush(cfg_.ev, "R " + cfg_.wid + " " + op + " " + p.name + " " + std::to_string(p.permits) + " " +
                           std::to_string(t_call) + " " + std::to_string(rec.time_us()) + " " +
                           std::to_string(timeout_ms) + " " + a.outcome + " " + clean(a.msg) + " " +
                           std::to_string(a.m_call) + " " + std::to_string(a.m_ret));
  }

  void unexpected(const std::string& what) { shared_.rpush(cfg_.ev, "X " + cfg_.wid + " " + clean(what)); }

  void done() {
    Stats s = client_->stats();
    std::string line = "D " + cfg_.wid + " " + std::to_string(shared_.time_us());
    for (auto v : {s.grants, s.waits, s.timeouts, s.cancels, s.lost, s.reconnects, s.script_reloads, s.wakes_signal,
                   s.wakes_timer, s.wakes_heartbeat, s.wakes_keyspace, s.heartbeats}) {
      line += " " + std::to_string(v);
    }
    shared_.rpush(cfg_.ev, line);
  }

  void loop(int tid);
  void commands();

 private:
  Attempt blocking(const std::string& op, Participant& p, long timeout_ms, const Rng& rnd);
  Attempt async_wait(int tid, const std::string& op, Participant& p, long timeout_ms, const Rng& rnd);
  Attempt future_wait(int tid, Participant& p, long timeout_ms);
  AcquireCallback callback(const std::string& wait, const std::shared_ptr<AsyncWait>& st,
                           const std::weak_ptr<FairSemaphore>& sem);
  std::string wait_id(int tid) { return cfg_.wid + ".a" + std::to_string(tid) + "." + std::to_string(++waits_); }
  void accepted(const std::string& wait, const Participant& p, const std::string& op, Micros m_call, long timeout_ms);
  void hold(Rec& rec, const std::string& gid, Participant& p, std::uint64_t fence, long ms);
  void probe(Rec& rec, int tid, Participant& p, Micros t_call, const std::string& op);

  const Config& cfg_;
  SharedRec shared_;
  std::unique_ptr<Client> client_;
  std::vector<Participant> shared_ps_;
  std::atomic<long> gids_{0}, waits_{0};
};

// lock(), try_lock_for(), try_lock(), or lock() cancelled from another thread.
Attempt Worker::blocking(const std::string& op, Participant& p, long timeout_ms, const Rng& rnd) {
  Attempt a;
  const Micros m_call = faults::mono_us();
  std::thread canceller;
  try {
    bool granted = false;
    if (op == "lock") {
      p.sem->lock();
      granted = true;
    } else if (op == "for") {
      granted = p.sem->try_lock_for(milliseconds(timeout_ms));
      if (!granted) a.outcome = "timeout";
    } else if (op == "try") {
      granted = p.sem->try_lock();
      if (!granted) a.outcome = "busy";
    } else {  // cancel: lock() cancelled from another thread after a random delay
      long delay = rnd(0, cfg_.cancel_max);
      std::shared_ptr<FairSemaphore> sem = p.sem;
      canceller = std::thread([sem, delay] {
        std::this_thread::sleep_for(milliseconds(delay));
        sem->cancel();
      });
      p.sem->lock();
      granted = true;
    }
    if (granted) a = learned_now(p);
  } catch (...) {
    a.outcome = failed_kind(p, std::current_exception(), a.msg);
  }
  a.m_ret = faults::mono_us();
  a.m_call = m_call;
  if (canceller.joinable()) canceller.join();
  return a;
}

// The callback of async wait `wait`: records each run (C), hands the first
// result to the waiting thread.
AcquireCallback Worker::callback(const std::string& wait, const std::shared_ptr<AsyncWait>& st,
                                 const std::weak_ptr<FairSemaphore>& sem) {
  return [this, wait, st, sem](const AcquireResult& r) {
    Attempt a;
    a.m_learn = faults::mono_us();
    a.granted = r.granted();
    a.fence = r.fence();
    if (a.granted) {
      if (auto s = sem.lock()) a.m_owned = believes(*s, a.fence);
    } else {
      a.outcome = kind_of(r.error(), a.msg);
    }
    shared_.rpush(cfg_.ev, "C " + wait + " " + (a.granted ? "granted" : a.outcome) + " " + std::to_string(a.m_learn));
    std::lock_guard<std::mutex> lk(st->mu);
    if (st->done) return;  // a second run: recorded, the checker flags it
    st->a = a;
    st->done = true;
    st->cv.notify_all();
  };
}

// Records that async wait `wait` (`op` on `p`) was accepted.
void Worker::accepted(const std::string& wait, const Participant& p, const std::string& op, Micros m_call,
                      long timeout_ms) {
  shared_.rpush(cfg_.ev, "A " + wait + " " + cfg_.wid + " " + p.name + " " + op + " " + std::to_string(m_call) + " " +
                             std::to_string(timeout_ms));
}

// lock_async (op async: without a deadline; asyncfor: with one); its handle
// or the object may be cancelled from another thread. Waits for the callback.
Attempt Worker::async_wait(int tid, const std::string& op, Participant& p, long timeout_ms, const Rng& rnd) {
  auto st = std::make_shared<AsyncWait>();
  const std::string wait = wait_id(tid);
  const Micros m_call = faults::mono_us();
  AcquireHandle handle;
  try {
    auto cb = callback(wait, st, p.sem);
    handle = op == "asyncfor" ? p.sem->lock_async(milliseconds(timeout_ms), cb) : p.sem->lock_async(cb);
  } catch (...) {
    Attempt a;
    a.outcome = failed_kind(p, std::current_exception(), a.msg);
    return a;
  }
  accepted(wait, p, op, m_call, timeout_ms);
  std::thread canceller;
  const long how = rnd(0, 2), delay = rnd(0, cfg_.cancel_max);
  if (how > 0) {
    std::shared_ptr<FairSemaphore> sem = p.sem;
    canceller = std::thread([handle, sem, how, delay] {
      std::this_thread::sleep_for(milliseconds(delay));
      if (how == 1) handle.cancel();
      if (how == 2) sem->cancel();
    });
  }
  std::unique_lock<std::mutex> lk(st->mu);
  const auto bound = milliseconds(std::max(timeout_ms, 0L)) + std::chrono::seconds(30);
  bool called = st->cv.wait_for(lk, bound, [&] { return st->done; });
  Attempt a = st->a;
  lk.unlock();
  if (canceller.joinable()) canceller.join();
  if (!called) {
    unexpected("async wait " + wait + " was not called back within " + std::to_string(bound.count()) + " ms");
    a.outcome = "nocallback";
  }
  return a;
}

// lock_future with a deadline; the future's result counts as the callback.
Attempt Worker::future_wait(int tid, Participant& p, long timeout_ms) {
  Attempt a;
  const Micros m_call = faults::mono_us();
  std::future<std::uint64_t> f;
  try {
    f = p.sem->lock_future(milliseconds(timeout_ms));
  } catch (...) {
    a.outcome = failed_kind(p, std::current_exception(), a.msg);
    return a;
  }
  const std::string wait = wait_id(tid);
  accepted(wait, p, "future", m_call, timeout_ms);
  if (f.wait_for(milliseconds(timeout_ms) + std::chrono::seconds(30)) != std::future_status::ready) {
    unexpected("future " + wait + " not ready 30 s after its deadline");
    a.outcome = "nocallback";
    return a;
  }
  try {
    a.fence = f.get();
    a.m_learn = faults::mono_us();
    a.granted = true;
    a.m_owned = believes(*p.sem, a.fence);
  } catch (...) {
    a.m_learn = faults::mono_us();
    a.outcome = kind_of(std::current_exception(), a.msg, false);
  }
  shared_.rpush(cfg_.ev, "C " + wait + " " + (a.granted ? "granted" : a.outcome) + " " + std::to_string(a.m_learn));
  return a;
}

// Holds for `ms`, sampling the belief every ~2 ms.
void Worker::hold(Rec& rec, const std::string& gid, Participant& p, std::uint64_t fence, long ms) {
  auto hold_end = std::chrono::steady_clock::now() + milliseconds(ms);
  for (int guard = 0; guard < 1000000; ++guard) {
    auto now = std::chrono::steady_clock::now();
    if (now >= hold_end) break;
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(milliseconds(2), hold_end - now));
    sample(rec, gid, p, fence);
  }
}

// After a wait that reported no grant, owns_lock() must be false (on the
// thread's own object: a shared one may be held by another thread). If it is
// true, the user is told both: that is recorded as a grant (op "phantom:op",
// a violation of its own) and believed while owns_lock() says so (at most
// 3 s), then released.
void Worker::probe(Rec& rec, int tid, Participant& p, Micros t_call, const std::string& op) {
  if (p.shared) return;
  Attempt a = learned_now(p);
  if (!a.m_owned) return;
  std::string gid = on_granted(rec, tid, p, t_call, "phantom:" + op, a);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  while (std::chrono::steady_clock::now() < until && believes(*p.sem, a.fence)) hold(rec, gid, p, a.fence, 20);
  finish(rec, gid, p, a.fence);
}

void Worker::loop(int tid) {
  Rec rec(cfg_.rec);
  std::mt19937_64 rng(cfg_.seed * 1000003ULL + static_cast<unsigned long long>(tid));
  Rng rnd = [&](long lo, long hi) {
    if (hi <= lo) return lo;
    return std::uniform_int_distribution<long>(lo, hi)(rng);
  };
  std::vector<Participant> ps;
  for (auto& [name, permits] : cfg_.names) ps.push_back(make(name, permits));
  int total_weight = 0;
  for (auto& o : cfg_.ops) total_weight += o.second;
  const auto start = std::chrono::steady_clock::now();
  const auto end = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                               std::chrono::duration<double>(cfg_.seconds > 0 ? cfg_.seconds : 1e6));
  for (long it = 0; (cfg_.iters <= 0 || it < cfg_.iters) && std::chrono::steady_clock::now() < end; ++it) {
    const auto which = static_cast<size_t>(rnd(0, static_cast<long>(ps.size()) - 1));
    Participant& p = (!shared_ps_.empty() && rnd(0, 99) < cfg_.shared_pct) ? shared_ps_[which] : ps[which];
    long pick = rnd(0, total_weight - 1);
    std::string op;
    for (auto& o : cfg_.ops) {
      if (pick < o.second) {
        op = o.first;
        break;
      }
      pick -= o.second;
    }
    Micros t_call = rec.time_us();
    const bool timed = op == "for" || op == "asyncfor" || op == "future";
    long timeout_ms = timed ? rnd(cfg_.timeout.lo, cfg_.timeout.hi) : -1;
    Attempt a = op == "future"                      ? future_wait(tid, p, timeout_ms)
                : op == "async" || op == "asyncfor" ? async_wait(tid, op, p, timeout_ms, rnd)
                                                    : blocking(op, p, timeout_ms, rnd);
    if (!a.granted && unexpected_kind(a.outcome)) unexpected(op + ": " + a.outcome + ": " + a.msg);
    if (a.granted) {
      std::string gid = on_granted(rec, tid, p, t_call, op, a);
      long ms = rnd(cfg_.hold.lo, cfg_.hold.hi);
      if (cfg_.long_hold_pct > 0 && rnd(0, 99) < cfg_.long_hold_pct) ms = cfg_.long_hold_ms;
      hold(rec, gid, p, a.fence, ms);
      finish(rec, gid, p, a.fence);
    } else {
      returned(rec, op, p, t_call, timeout_ms, a);
      probe(rec, tid, p, t_call, op);
      if (a.outcome != "timeout" && a.outcome != "busy" && a.outcome != "cancelled") {
        std::this_thread::sleep_for(milliseconds(20));  // an error: do not spin
      }
    }
    long gap = rnd(cfg_.gap.lo, cfg_.gap.hi);
    if (gap > 0) std::this_thread::sleep_for(milliseconds(gap));
  }
}

// stdin-driven mode for deterministic scenarios.
void Worker::commands() {
  Rec rec(cfg_.rec);
  std::map<std::string, Participant> ps;
  struct Sampler {
    std::atomic<bool> stop{false};
    std::thread t;
    std::string gid;
    std::uint64_t fence = 0;
  };
  std::map<std::string, std::unique_ptr<Sampler>> samplers;
  auto get = [&](const std::string& spec) -> Participant& {
    auto colon = spec.rfind(':');
    std::string name = spec;
    std::uint32_t permits = 1;
    if (colon != std::string::npos) {
      name = spec.substr(0, colon);
      permits = static_cast<std::uint32_t>(std::atol(spec.substr(colon + 1).c_str()));
    }
    auto it = ps.find(name);
    if (it == ps.end()) it = ps.emplace(name, make(name, permits)).first;
    return it->second;
  };
  auto say = [](const std::string& s) {
    std::cout << s << std::endl;  // flushes
  };
  say("ready " + client_->id() + " " + std::to_string(::getpid()));
  std::string line;
  while (std::getline(std::cin, line)) {
    auto words = faults::split(line);
    const std::string& cmd = words[0];
    if (cmd == "exit") break;
    if (words.size() < 2) {
      say("error - usage");
      continue;
    }
    Participant& p = get(words[1]);
    if (cmd == "lock" || cmd == "for" || cmd == "try") {
      Micros t_call = rec.time_us();
      long timeout_ms = cmd == "for" && words.size() > 2 ? std::atol(words[2].c_str()) : -1;
      Attempt a = blocking(cmd, p, timeout_ms, [](long lo, long) { return lo; });
      const std::string& outcome = a.outcome;
      if (!a.granted && unexpected_kind(outcome)) unexpected(cmd + ": " + outcome + ": " + a.msg);
      if (a.granted) {
        std::string gid = on_granted(rec, 0, p, t_call, cmd, a);
        auto s = std::make_unique<Sampler>();
        s->gid = gid;
        s->fence = a.fence;
        Sampler* raw = s.get();
        Participant* pp = &p;
        s->t = std::thread([this, raw, pp] {
          Rec r(cfg_.rec);
          while (!raw->stop.load()) {
            sample(r, raw->gid, *pp, raw->fence);
            std::this_thread::sleep_for(milliseconds(2));
          }
        });
        samplers[p.name] = std::move(s);
        say("granted " + p.name + " " + std::to_string(a.fence) + " " + gid);
      } else {
        returned(rec, cmd, p, t_call, timeout_ms, a);
        say((outcome == "timeout" || outcome == "busy" ? outcome : "error " + outcome) + " " + p.name + " " +
            clean(a.msg));
      }
    } else if (cmd == "unlock") {
      auto it = samplers.find(p.name);
      if (it == samplers.end()) {
        say("error notheld " + p.name);
        continue;
      }
      it->second->stop = true;
      it->second->t.join();
      std::string gid = it->second->gid;
      std::uint64_t fence = it->second->fence;
      samplers.erase(it);
      say("unlocking " + p.name);
      std::string result = finish(rec, gid, p, fence);
      say("unlocked " + p.name + " " + result);
    } else if (cmd == "owns") {
      say(std::string("owns ") + p.name + " " + (p.sem->owns_lock() ? "1" : "0"));
    } else {
      say("error - unknown command " + cmd);
    }
  }
  for (auto& [name, s] : samplers) {
    s->stop = true;
    s->t.join();
  }
  say("bye");
}

}  // namespace

int main(int argc, char** argv) {
  Config cfg;
  try {
    cfg = parse(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "fairlock_fault_worker: " << e.what() << "\n";
    return 2;
  }
  try {
    Worker w(cfg);
    if (cfg.mode == "cmd") {
      w.commands();
    } else {
      std::vector<std::thread> threads;
      for (int t = 0; t < cfg.threads; ++t) threads.emplace_back([&w, t] { w.loop(t); });
      for (auto& t : threads) t.join();
    }
    w.done();
  } catch (const std::exception& e) {
    std::cerr << "fairlock_fault_worker " << cfg.wid << ": " << e.what() << "\n";
    return 3;
  }
  return 0;
}
