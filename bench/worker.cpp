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
  std::string system = "fair";  // fair | unfair | zset
  std::string name = "bench";
  int threads = 1;
  int permits = 1;
  std::string notify = "publish";
  int proc = 0;
  int hold_us = 0;
  int liveness_ms = 5000;
  int max_s = 120;
  int pool_size = 0;  // 0: the library's default
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

}  // namespace

int worker_main(int argc, char** argv) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the driver
  Args a = parse(argc, argv);
  ::alarm(static_cast<unsigned>(a.max_s));  // hard bound on this process's life
  const std::string host = "127.0.0.1";

  std::unique_ptr<fairlock::Client> client;
  std::vector<std::unique_ptr<fairlock::FairSemaphore>> sems;
  std::vector<std::unique_ptr<Redis>> conns;
  std::string unlock_sha;
  WorkerTotals tot;

  if (a.system == "fair") {
    fairlock::Options o;
    o.url = "redis://" + host + ":" + std::to_string(a.port);
    o.notify = a.notify == "keyspace" ? fairlock::Notify::keyspace
               : a.notify == "poll"   ? fairlock::Notify::poll
                                      : fairlock::Notify::publish;
    o.liveness_ttl = std::chrono::milliseconds(a.liveness_ms);
    if (a.pool_size > 0) o.pool_size = static_cast<std::size_t>(a.pool_size);
    if (std::getenv("FAIRLOCK_BENCH_LOG")) {  // debugging: the library's log on stderr
      // Unregistered: the library's rule is never to use spdlog's registry.
      o.logger = std::make_shared<spdlog::logger>("fairlock", std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
      o.logger->set_level(spdlog::level::debug);
    }
    client = std::make_unique<fairlock::Client>(o);
    for (int t = 0; t < a.threads; ++t) {
      sems.push_back(std::make_unique<fairlock::FairSemaphore>(*client, a.name, static_cast<std::uint32_t>(a.permits)));
    }
    tot.notify = mode_name(client->notify_mode());
  } else if (a.system == "unfair" || a.system == "zset") {
    for (int t = 0; t < a.threads; ++t) conns.push_back(std::make_unique<Redis>(host, a.port, 5000));
    unlock_sha = load_unlock_script(*conns[0]);
    tot.notify = "-";
  } else {
    throw std::runtime_error("worker: unknown system " + a.system);
  }
  std::printf("ready %s %s\n", tot.notify.c_str(), client ? client->id().c_str() : "-");
  std::fflush(stdout);

  std::string go;
  if (!read_line(go, 60000)) return 3;
  long long go_ns = 0, stop_ns = 0;
  if (std::sscanf(go.c_str(), "go %lld %lld", &go_ns, &stop_ns) != 2) return 3;

  std::atomic<bool> stop{false};
  std::atomic<int> finished{0};
  std::mutex err_mu;
  std::vector<std::vector<Rec>> recs(static_cast<std::size_t>(a.threads));
  std::vector<long long> rts(static_cast<std::size_t>(a.threads), 0);
  std::atomic<long long> errors{0};
  auto note_error = [&](const std::string& what) {
    errors.fetch_add(1);
    std::lock_guard<std::mutex> lk(err_mu);
    if (tot.first_error.empty()) tot.first_error = what;
  };

  auto body = [&](int t) {
    auto& out = recs[static_cast<std::size_t>(t)];
    out.reserve(1 << 14);
    const int part = a.proc * 1000 + t;
    sleep_until_ns(go_ns);
    // Real pollers are not phase-locked: each zset participant's first sleep
    // is a random part of the 500 ms period (the synchronized start would
    // otherwise align every poll); it still joins the queue at once.
    std::uint64_t x = static_cast<std::uint64_t>(now_ns()) ^ (static_cast<std::uint64_t>(part) * 0x9e3779b97f4a7c15ULL);
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    int first_sleep_ms = static_cast<int>(x % 500);
    RtCounter rt;
    rt.until_ns = stop_ns;
    StopFn stopped = [&] { return stop.load(std::memory_order_relaxed); };
    long long counter = 0;
    try {
      while (!stop.load(std::memory_order_relaxed)) {
        Rec r;
        r.part = part;
        r.wait = now_ns();
        r.wait_rt_us = wall_us();
        bool got = false;
        std::string token;
        if (a.system == "fair") {
          try {
            sems[static_cast<std::size_t>(t)]->lock();
            got = true;
          } catch (const fairlock::Cancelled&) {
            got = false;
          }
        } else {
          token = std::to_string(a.proc) + "-" + std::to_string(t) + "-" + std::to_string(++counter);
          Redis& c = *conns[static_cast<std::size_t>(t)];
          got = a.system == "unfair"
                    ? unfair_lock(c, a.name + ":unfair", token, stopped, rt)
                    : zset_lock(c, a.name + ":zq", a.name + ":zlock", token, stopped, rt, first_sleep_ms);
          first_sleep_ms = 500;
        }
        if (!got) {
          out.push_back(r);
          break;
        }
        r.grant = now_ns();
        if (a.system == "fair") r.fence = sems[static_cast<std::size_t>(t)]->fence();
        spin_for_us(a.hold_us);
        r.rel_start = now_ns();
        if (a.system == "fair") {
          sems[static_cast<std::size_t>(t)]->unlock();
        } else {
          Redis& c = *conns[static_cast<std::size_t>(t)];
          unfair_unlock(c, unlock_sha, a.system == "unfair" ? a.name + ":unfair" : a.name + ":zlock", token, rt);
        }
        r.rel_end = now_ns();
        out.push_back(r);
      }
    } catch (const std::exception& e) {
      note_error(e.what());
    }
    rts[static_cast<std::size_t>(t)] = rt.n;
    finished.fetch_add(1);
  };

  std::vector<std::thread> threads;
  for (int t = 0; t < a.threads; ++t) threads.emplace_back(body, t);
  sleep_until_ns(stop_ns);
  stop.store(true);
  // Waiters blocked in lock() are cancelled (bounded: 20 s at most).
  const std::int64_t give_up = now_ns() + 20LL * 1000000000;
  while (finished.load() < a.threads && now_ns() < give_up) {
    for (auto& s : sems) s->cancel();
    sleep_ns(20 * 1000000LL);
  }
  if (finished.load() < a.threads) {
    std::printf("done stuck=1\n");
    std::fflush(stdout);
    ::_exit(4);
  }
  for (auto& th : threads) th.join();

  {
    std::ofstream f(a.out);
    for (const auto& v : recs) {
      for (const auto& r : v) {
        f << r.part << ' ' << r.wait << ' ' << r.grant << ' ' << r.rel_start << ' ' << r.rel_end << ' ' << r.fence
          << ' ' << r.wait_rt_us << '\n';
      }
    }
    if (!f) note_error("cannot write " + a.out);
  }
  for (long long n : rts) tot.rt += n;
  tot.errors = errors.load();
  if (client) {
    auto s = client->stats();
    tot.heartbeats = static_cast<long long>(s.heartbeats);
    tot.wakes_signal = static_cast<long long>(s.wakes_signal);
    tot.wakes_keyspace = static_cast<long long>(s.wakes_keyspace);
    tot.wakes_timer = static_cast<long long>(s.wakes_timer);
    tot.wakes_heartbeat = static_cast<long long>(s.wakes_heartbeat);
  }
  std::string err = tot.first_error;
  for (auto& c : err) {
    if (c == '\n' || c == ' ') c = '_';
  }
  std::printf("done rt=%lld errors=%lld hb=%lld sig=%lld ks=%lld timer=%lld hbw=%lld err=%s\n", tot.rt, tot.errors,
              tot.heartbeats, tot.wakes_signal, tot.wakes_keyspace, tot.wakes_timer, tot.wakes_heartbeat,
              err.empty() ? "-" : err.c_str());
  std::fflush(stdout);
  sems.clear();
  client.reset();
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
