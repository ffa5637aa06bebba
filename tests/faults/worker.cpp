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
//     ops=lock:4,for:3,try:1,cancel:1   operation weights
//
// Records (RPUSH ev, space separated; times are recorder TIME microseconds):
//   S wid pid cid t
//   G gid wid name permits fence t_call t_start lease_ms owned_at_start op
//   E gid t_end owned_at_end                  (right before unlock)
//   U gid result t                            (ok lost conn timeouterr server ...)
//   L gid t                                   (on_lost callback)
//   R wid op name permits t_call t_ret timeout_ms outcome message
//   D wid t grants waits timeouts cancels lost reconnects script_reloads
//     wakes_signal wakes_timer wakes_heartbeat wakes_keyspace heartbeats
//   X wid message                             (an unexpected exception type)
// Validity samples: HSET ev:valid gid t, written while owns_lock() is true
// after reading t (so the grant was believed valid at t).
#include <fairlock/fairlock.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
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
    else if (k == "cmd_timeout") c.cmd_timeout = std::atol(v.c_str());
    else if (k == "connect_timeout") c.connect_timeout = std::atol(v.c_str());
    else if (k == "hold") c.hold = parse_range(v);
    else if (k == "for") c.timeout = parse_range(v);
    else if (k == "gap") c.gap = parse_range(v);
    else if (k == "cancel") c.cancel_max = std::atol(v.c_str());
    else if (k == "renew") c.renew = v != "0";
    else if (k == "scripts") c.functions = v != "evalsha";
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

// The outcome kind of the exception in flight.
std::string kind_of(const std::exception_ptr& e, std::string& msg) {
  try {
    std::rethrow_exception(e);
  } catch (const Cancelled& x) {
    msg = x.what();
    return "cancelled";
  } catch (const PermitsMismatch& x) {
    msg = x.what();
    return "permits";
  } catch (const ConnectionError& x) {
    msg = x.what();
    return "conn";
  } catch (const TimeoutError& x) {
    msg = x.what();
    return "timeouterr";
  } catch (const ServerError& x) {
    msg = x.what();
    return "server";
  } catch (const Error& x) {
    msg = x.what();
    return "error";
  } catch (const std::logic_error& x) {
    msg = x.what();
    return "LOGIC";
  } catch (const std::exception& x) {
    msg = x.what();
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
  std::shared_ptr<Slot> slot;
  std::unique_ptr<FairSemaphore> sem;
};

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
    client_ = std::make_unique<Client>(o);
    shared_.rpush(cfg.ev, "S " + cfg.wid + " " + std::to_string(::getpid()) + " " + client_->id() + " " +
                              std::to_string(shared_.time_us()));
  }

  Participant make(const std::string& name, std::uint32_t permits) {
    Participant p;
    p.name = name;
    p.permits = permits;
    p.slot = std::make_shared<Slot>();
    LockOptions lo;
    lo.lease = milliseconds(cfg_.lease);
    lo.auto_renew = cfg_.renew;
    auto slot = p.slot;
    SharedRec* shared = &shared_;
    std::string ev = cfg_.ev;
    lo.on_lost = [slot, shared, ev] {
      std::string g = slot->get();
      if (!g.empty()) shared->rpush(ev, "L " + g + " " + std::to_string(shared->time_us()));
    };
    p.sem = std::make_unique<FairSemaphore>(*client_, name, permits, lo);
    return p;
  }

  std::string next_gid(int tid) { return cfg_.wid + "." + std::to_string(tid) + "." + std::to_string(++gids_); }

  // Records a grant that lock()/try_lock*() just returned.
  std::string on_granted(Rec& rec, int tid, Participant& p, Micros t_call, const std::string& op) {
    Micros t_start = rec.time_us();
    bool owned = p.sem->owns_lock();
    std::string gid = next_gid(tid);
    p.slot->set(gid);
    rec.rpush(cfg_.ev, "G " + gid + " " + cfg_.wid + " " + p.name + " " + std::to_string(p.permits) + " " +
                           std::to_string(p.sem->fence()) + " " + std::to_string(t_call) + " " +
                           std::to_string(t_start) + " " + std::to_string(cfg_.lease) + " " + (owned ? "1" : "0") +
                           " " + op);
    return gid;
  }

  void sample(Rec& rec, const std::string& gid, Participant& p) {
    Micros t = rec.time_us();
    if (p.sem->owns_lock()) rec.hset(cfg_.ev + ":valid", gid, std::to_string(t));
  }

  // Records the end of a hold, unlocks, records the result. Returns it.
  std::string finish(Rec& rec, const std::string& gid, Participant& p) {
    Micros t_end = rec.time_us();
    bool owned = p.sem->owns_lock();
    rec.rpush(cfg_.ev, "E " + gid + " " + std::to_string(t_end) + " " + (owned ? "1" : "0"));
    std::string result = release_kind(p.sem->release());
    p.slot->set("");
    rec.rpush(cfg_.ev, "U " + gid + " " + result + " " + std::to_string(rec.time_us()));
    return result;
  }

  void returned(Rec& rec, const std::string& op, const Participant& p, Micros t_call, long timeout_ms,
                const std::string& outcome, const std::string& msg) {
    rec.rpush(cfg_.ev, "R " + cfg_.wid + " " + op + " " + p.name + " " + std::to_string(p.permits) + " " +
                           std::to_string(t_call) + " " + std::to_string(rec.time_us()) + " " +
                           std::to_string(timeout_ms) + " " + outcome + " " + clean(msg));
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

  const Config& cfg_;
  SharedRec shared_;
  std::unique_ptr<Client> client_;
  std::atomic<long> gids_{0};
};

void Worker::loop(int tid) {
  Rec rec(cfg_.rec);
  std::mt19937_64 rng(cfg_.seed * 1000003ULL + static_cast<unsigned long long>(tid));
  auto rnd = [&](long lo, long hi) {
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
    Participant& p = ps[static_cast<size_t>(rnd(0, static_cast<long>(ps.size()) - 1))];
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
    long timeout_ms = op == "for" ? rnd(cfg_.timeout.lo, cfg_.timeout.hi) : -1;
    bool granted = false;
    std::string outcome, msg;
    std::thread canceller;
    try {
      if (op == "lock") {
        p.sem->lock();
        granted = true;
      } else if (op == "for") {
        granted = p.sem->try_lock_for(milliseconds(timeout_ms));
        if (!granted) outcome = "timeout";
      } else if (op == "try") {
        granted = p.sem->try_lock();
        if (!granted) outcome = "busy";
      } else {  // cancel: lock() cancelled from another thread after a random delay
        long delay = rnd(0, cfg_.cancel_max);
        FairSemaphore* sem = p.sem.get();
        canceller = std::thread([sem, delay] {
          std::this_thread::sleep_for(milliseconds(delay));
          sem->cancel();
        });
        p.sem->lock();
        granted = true;
      }
    } catch (...) {
      outcome = kind_of(std::current_exception(), msg);
      if (unexpected_kind(outcome)) unexpected(op + ": " + outcome + ": " + msg);
    }
    if (granted) {
      std::string gid = on_granted(rec, tid, p, t_call, op);
      long hold = rnd(cfg_.hold.lo, cfg_.hold.hi);
      if (cfg_.long_hold_pct > 0 && rnd(0, 99) < cfg_.long_hold_pct) hold = cfg_.long_hold_ms;
      auto hold_end = std::chrono::steady_clock::now() + milliseconds(hold);
      for (int guard = 0; guard < 1000000; ++guard) {
        auto now = std::chrono::steady_clock::now();
        if (now >= hold_end) break;
        std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(milliseconds(2), hold_end - now));
        sample(rec, gid, p);
      }
      finish(rec, gid, p);
    } else {
      returned(rec, op, p, t_call, timeout_ms, outcome, msg);
      if (outcome != "timeout" && outcome != "busy" && outcome != "cancelled") {
        std::this_thread::sleep_for(milliseconds(20));  // an error: do not spin
      }
    }
    if (canceller.joinable()) canceller.join();
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
      bool granted = false;
      std::string outcome, msg;
      try {
        if (cmd == "lock") {
          p.sem->lock();
          granted = true;
        } else if (cmd == "for") {
          granted = p.sem->try_lock_for(milliseconds(timeout_ms));
          if (!granted) outcome = "timeout";
        } else {
          granted = p.sem->try_lock();
          if (!granted) outcome = "busy";
        }
      } catch (...) {
        outcome = kind_of(std::current_exception(), msg);
        if (unexpected_kind(outcome)) unexpected(cmd + ": " + outcome + ": " + msg);
      }
      if (granted) {
        std::string gid = on_granted(rec, 0, p, t_call, cmd);
        auto s = std::make_unique<Sampler>();
        s->gid = gid;
        Sampler* raw = s.get();
        Participant* pp = &p;
        s->t = std::thread([this, raw, pp] {
          Rec r(cfg_.rec);
          while (!raw->stop.load()) {
            sample(r, raw->gid, *pp);
            std::this_thread::sleep_for(milliseconds(2));
          }
        });
        samplers[p.name] = std::move(s);
        say("granted " + p.name + " " + std::to_string(p.sem->fence()) + " " + gid);
      } else {
        returned(rec, cmd, p, t_call, timeout_ms, outcome, msg);
        say((outcome == "timeout" || outcome == "busy" ? outcome : "error " + outcome) + " " + p.name + " " +
            clean(msg));
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
      samplers.erase(it);
      say("unlocking " + p.name);
      std::string result = finish(rec, gid, p);
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
