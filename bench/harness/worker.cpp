#include "worker.h"

#include <fairlock/fairlock.h>
#include <poll.h>
#include <signal.h>
#include <spdlog/logger.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

#include "common.h"
#include "systems.h"

namespace fbench {

namespace {

struct Args {
  int port = 0;
  std::string system = "fair";  // fair | unfair | zset | list
  std::string name = "bench";
  int threads = 1;
  int permits = 1;
  std::string notify = "publish";
  int proc = 0;
  int hold_us = 0;
  int liveness_ms = 5000;
  int max_s = 120;
  int pool_size = 0;  // 0: the library's default
  int tls_port = 0;   // fairlock over TLS to this port (with cacert)
  std::string cacert;
  std::string out;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--port") a.port = std::atoi(v.c_str());
    else if (k == "--system") a.system = v;
    else if (k == "--name") a.name = v;
    else if (k == "--threads") a.threads = std::atoi(v.c_str());
    else if (k == "--permits") a.permits = std::atoi(v.c_str());
    else if (k == "--notify") a.notify = v;
    else if (k == "--proc") a.proc = std::atoi(v.c_str());
    else if (k == "--hold-us") a.hold_us = std::atoi(v.c_str());
    else if (k == "--liveness-ms") a.liveness_ms = std::atoi(v.c_str());
    else if (k == "--max-s") a.max_s = std::atoi(v.c_str());
    else if (k == "--out") a.out = v;
    else if (k == "--pool-size") a.pool_size = std::atoi(v.c_str());
    else if (k == "--tls-port") a.tls_port = std::atoi(v.c_str());
    else if (k == "--cacert") a.cacert = v;
    else throw std::runtime_error("worker: unknown argument " + k);
  }
  if (a.port <= 0 || a.threads < 1 || a.out.empty()) throw std::runtime_error("worker: missing arguments");
  return a;
}

const char* mode_name(fairlock::Notify n) {
  switch (n) {
    case fairlock::Notify::publish: return "publish";
    case fairlock::Notify::keyspace: return "keyspace";
    case fairlock::Notify::poll: return "poll";
  }
  return "?";
}

// Reads one line from stdin within `timeout_ms`.
bool read_line(std::string& line, int timeout_ms) {
  line.clear();
  const std::int64_t end = now_ns() + static_cast<std::int64_t>(timeout_ms) * 1000000;
  for (;;) {
    std::int64_t left = (end - now_ns()) / 1000000;
    if (left <= 0) return false;
    pollfd p{0, POLLIN, 0};
    int n = ::poll(&p, 1, static_cast<int>(left));
    if (n <= 0) continue;
    char c = 0;
    ssize_t got = ::read(0, &c, 1);
    if (got <= 0) return false;
    if (c == '\n') return true;
    line.push_back(c);
  }
}

void spin_for_us(int us) {
  if (us <= 0) return;
  const std::int64_t end = now_ns() + static_cast<std::int64_t>(us) * 1000;
  while (now_ns() < end) {
  }
}

// The participants of one worker process: `threads` threads, each taking
// and releasing the lock in a loop from "go" until "stop", recording every
// request.
class Participants {
 public:
  explicit Participants(const Args& a)
      : a_(a), recs_(static_cast<std::size_t>(a.threads)), rts_(static_cast<std::size_t>(a.threads), 0) {
    if (a.system == "fair") connect_fair();
    else if (a.system == "unfair" || a.system == "zset") connect_baseline();
    else if (a.system == "list") connect_list();
    else throw std::runtime_error("worker: unknown system " + a.system);
  }
  ~Participants() { sems_.clear(); }  // before the client
  Participants(const Participants&) = delete;
  Participants& operator=(const Participants&) = delete;

  void print_ready() const {
    std::printf("ready %s %s\n", tot_.notify.c_str(), client_ ? client_->id().c_str() : "-");
    std::fflush(stdout);
  }
  // Runs every thread from go_ns to stop_ns; false if one is still stuck
  // in lock() 20 s after the stop (its thread is then not joined).
  bool run(std::int64_t go_ns, std::int64_t stop_ns) {
    for (int t = 0; t < a_.threads; ++t) threads_.emplace_back([this, t, go_ns, stop_ns] { body(t, go_ns, stop_ns); });
    sleep_until_ns(stop_ns);
    stop_.store(true);
    // Waiters blocked in lock() are cancelled (bounded: 20 s at most).
    const std::int64_t give_up = now_ns() + 20LL * 1000000000;
    while (finished_.load() < a_.threads && now_ns() < give_up) {
      for (auto& s : sems_) s->cancel();
      sleep_ns(20 * 1000000LL);
    }
    if (finished_.load() < a_.threads) return false;
    for (auto& th : threads_) th.join();
    return true;
  }
  void write_records() {
    std::ofstream f(a_.out);
    for (const auto& v : recs_) {
      for (const auto& r : v) {
        f << r.part << ' ' << r.wait << ' ' << r.grant << ' ' << r.rel_start << ' ' << r.rel_end << ' ' << r.fence
          << ' ' << r.wait_rt_us << '\n';
      }
    }
    if (!f) note_error("cannot write " + a_.out);
  }
  void print_done();

 private:
  // One thread's state.
  struct Slot {
    int t = 0, part = 0;
    int first_sleep_ms = 0;  // the sorted-set queue's first poll
    RtCounter rt;
    long long counter = 0;
  };
  void connect_fair();
  void connect_baseline();
  void connect_list();
  int part_id(int t) const { return a_.proc * 1000 + t; }
  void body(int t, std::int64_t go_ns, std::int64_t stop_ns);
  bool request(Slot& s, const StopFn& stopped);
  bool acquire(Slot& s, const StopFn& stopped, std::string& token);
  void note_error(const std::string& what) {
    errors_.fetch_add(1);
    std::lock_guard<std::mutex> lk(err_mu_);
    if (tot_.first_error.empty()) tot_.first_error = what;
  }
  const Args a_;
  const std::string host_ = "127.0.0.1";
  std::unique_ptr<fairlock::Client> client_;
  std::vector<std::unique_ptr<fairlock::FairSemaphore>> sems_;
  std::vector<std::unique_ptr<Redis>> conns_;
  std::vector<std::unique_ptr<Redis>> subs_;  // list: one subscriber per participant
  ListLock list_;
  std::string unlock_sha_;
  WorkerTotals tot_;
  std::atomic<bool> stop_{false};
  std::atomic<int> finished_{0};
  std::mutex err_mu_;
  std::vector<std::vector<Rec>> recs_;
  std::vector<long long> rts_;
  std::atomic<long long> errors_{0};
  std::vector<std::thread> threads_;
};

void Participants::connect_fair() {
  fairlock::Options o;
  o.url = "redis://" + host_ + ":" + std::to_string(a_.port);
  if (a_.tls_port > 0) {
    o.url = "rediss://" + host_ + ":" + std::to_string(a_.tls_port);
    o.tls.ca_file = a_.cacert;
  }
  o.notify = a_.notify == "keyspace" ? fairlock::Notify::keyspace
             : a_.notify == "poll"   ? fairlock::Notify::poll
                                     : fairlock::Notify::publish;
  o.liveness_ttl = std::chrono::milliseconds(a_.liveness_ms);
  if (a_.pool_size > 0) o.pool_size = static_cast<std::size_t>(a_.pool_size);
  if (std::getenv("FAIRLOCK_BENCH_LOG")) {  // debugging: the library's log on stderr
    // Unregistered: the library's rule is never to use spdlog's registry.
    o.logger = std::make_shared<spdlog::logger>("fairlock", std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
    o.logger->set_level(spdlog::level::debug);
  }
  client_ = std::make_unique<fairlock::Client>(o);
  for (int t = 0; t < a_.threads; ++t) {
    sems_.push_back(
        std::make_unique<fairlock::FairSemaphore>(*client_, a_.name, static_cast<std::uint32_t>(a_.permits)));
  }
  tot_.notify = mode_name(client_->notify_mode());
}

void Participants::connect_baseline() {
  for (int t = 0; t < a_.threads; ++t) conns_.push_back(std::make_unique<Redis>(host_, a_.port, 5000));
  unlock_sha_ = load_unlock_script(*conns_[0]);
  tot_.notify = "-";
}

void Participants::connect_list() {
  list_ = ListLock{a_.name + ":list", a_.name + ":wake:"};
  for (int t = 0; t < a_.threads; ++t) {
    conns_.push_back(std::make_unique<Redis>(host_, a_.port, 5000));
    subs_.push_back(std::make_unique<Redis>(host_, a_.port, 5000));
    list_subscribe(*subs_.back(), list_.channel_prefix + std::to_string(part_id(t)));
  }
  unlock_sha_ = load_list_release_script(*conns_[0]);
  tot_.notify = "publish";
}

void Participants::body(int t, std::int64_t go_ns, std::int64_t stop_ns) {
  recs_[static_cast<std::size_t>(t)].reserve(1 << 14);
  Slot s;
  s.t = t;
  s.part = part_id(t);
  sleep_until_ns(go_ns);
  // Real pollers are not phase-locked: each zset participant's first sleep
  // is a random part of the 500 ms period (the synchronized start would
  // otherwise align every poll); it still joins the queue at once.
  std::uint64_t x = static_cast<std::uint64_t>(now_ns()) ^ (static_cast<std::uint64_t>(s.part) * 0x9e3779b97f4a7c15ULL);
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  s.first_sleep_ms = static_cast<int>(x % 500);
  s.rt.until_ns = stop_ns;
  StopFn stopped = [this] { return stop_.load(std::memory_order_relaxed); };
  try {
    while (!stop_.load(std::memory_order_relaxed) && request(s, stopped)) {
    }
  } catch (const std::exception& e) {
    note_error(e.what());
  }
  rts_[static_cast<std::size_t>(t)] = s.rt.n;
  finished_.fetch_add(1);
}

// One lock request and its release, recorded; false if it was not granted.
bool Participants::request(Slot& s, const StopFn& stopped) {
  const auto t = static_cast<std::size_t>(s.t);
  Rec r;
  r.part = s.part;
  r.wait = now_ns();
  r.wait_rt_us = wall_us();
  std::string token;
  if (!acquire(s, stopped, token)) {
    recs_[t].push_back(r);
    return false;
  }
  r.grant = now_ns();
  if (a_.system == "fair") r.fence = sems_[t]->fence();
  spin_for_us(a_.hold_us);
  r.rel_start = now_ns();
  if (a_.system == "fair") {
    sems_[t]->unlock();
  } else if (a_.system == "list") {
    list_unlock(*conns_[t], unlock_sha_, list_, s.rt);
  } else {
    unfair_unlock(*conns_[t], unlock_sha_, a_.system == "unfair" ? a_.name + ":unfair" : a_.name + ":zlock", token,
                  s.rt);
  }
  r.rel_end = now_ns();
  recs_[t].push_back(r);
  return true;
}

bool Participants::acquire(Slot& s, const StopFn& stopped, std::string& token) {
  const auto t = static_cast<std::size_t>(s.t);
  if (a_.system == "fair") {
    try {
      sems_[t]->lock();
      return true;
    } catch (const fairlock::Cancelled&) {
      return false;
    }
  }
  Redis& c = *conns_[t];
  if (a_.system == "list") return list_lock(c, *subs_[t], list_, std::to_string(s.part), stopped, s.rt);
  token = std::to_string(a_.proc) + "-" + std::to_string(s.t) + "-" + std::to_string(++s.counter);
  const bool got = a_.system == "unfair"
                       ? unfair_lock(c, a_.name + ":unfair", token, stopped, s.rt)
                       : zset_lock(c, a_.name + ":zq", a_.name + ":zlock", token, stopped, s.rt, s.first_sleep_ms);
  s.first_sleep_ms = 500;
  return got;
}

void Participants::print_done() {
  for (long long n : rts_) tot_.rt += n;
  tot_.errors = errors_.load();
  if (client_) {
    auto st = client_->stats();
    tot_.heartbeats = static_cast<long long>(st.heartbeats);
    tot_.wakes_signal = static_cast<long long>(st.wakes_signal);
    tot_.wakes_keyspace = static_cast<long long>(st.wakes_keyspace);
    tot_.wakes_timer = static_cast<long long>(st.wakes_timer);
    tot_.wakes_heartbeat = static_cast<long long>(st.wakes_heartbeat);
  }
  std::string err = tot_.first_error;
  for (auto& c : err) {
    if (c == '\n' || c == ' ') c = '_';
  }
  std::printf("done rt=%lld errors=%lld hb=%lld sig=%lld ks=%lld timer=%lld hbw=%lld err=%s\n", tot_.rt, tot_.errors,
              tot_.heartbeats, tot_.wakes_signal, tot_.wakes_keyspace, tot_.wakes_timer, tot_.wakes_heartbeat,
              err.empty() ? "-" : err.c_str());
  std::fflush(stdout);
}

}  // namespace

int worker_main(int argc, char** argv) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the driver
  Args a = parse(argc, argv);
  ::alarm(static_cast<unsigned>(a.max_s));  // hard bound on this process's life
  Participants p(a);
  p.print_ready();
  std::string go;
  if (!read_line(go, 60000)) return 3;
  long long go_ns = 0, stop_ns = 0;
  if (std::sscanf(go.c_str(), "go %lld %lld", &go_ns, &stop_ns) != 2) return 3;
  if (!p.run(go_ns, stop_ns)) {
    std::printf("done stuck=1\n");
    std::fflush(stdout);
    ::_exit(4);
  }
  p.write_records();
  p.print_done();
  return 0;
}

bool read_records(const std::string& path, std::vector<Rec>& out) {
  std::ifstream f(path);
  if (!f) return false;
  Rec r;
  while (f >> r.part >> r.wait >> r.grant >> r.rel_start >> r.rel_end >> r.fence >> r.wait_rt_us) out.push_back(r);
  return true;
}

}  // namespace fbench
