#include "env.h"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "systems.h"

namespace fbench {

void say(const std::string& s) {
  std::printf("%s", s.c_str());
  std::fflush(stdout);
}

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

namespace {

// The redis-server's pid, if it runs on this machine (its INFO's process_id
// names a redis-server process in /proc), else 0.
pid_t local_redis_pid(Env& e) {
  if (e.host != "127.0.0.1" && e.host != "localhost") return 0;
  Reply r = e.admin->cmd({"INFO", "server"});
  const std::string info = reply_str(r.get());
  const auto pos = info.find("process_id:");
  if (pos == std::string::npos) return 0;
  const auto pid = static_cast<pid_t>(std::atol(info.c_str() + pos + 11));
  std::ifstream f("/proc/" + std::to_string(pid) + "/comm");
  std::string comm;
  std::getline(f, comm);
  return pid > 0 && comm.rfind("redis", 0) == 0 ? pid : 0;
}

// Pins the calling thread and redis-server's main thread (the one that
// serves clients; `pid` is its tid) to two different CPUs (or, `same_cpu`,
// to one), and puts both masks back when it goes. `why` says why not, if it
// could not.
class CrossPin {
 public:
  CrossPin(pid_t redis, bool same_cpu) : redis_(redis) {
    CPU_ZERO(&self_);
    CPU_ZERO(&theirs_);
    if (redis_ == 0) {
      why = "redis-server not on this machine";
      return;
    }
    if (::sched_getaffinity(0, sizeof self_, &self_) != 0 ||
        ::sched_getaffinity(redis_, sizeof theirs_, &theirs_) != 0) {
      why = "sched_getaffinity failed";
      return;
    }
    // The pinger on our lowest CPU, redis on its highest other one (or the same).
    for (int c = 0; c < CPU_SETSIZE && mine < 0; ++c) {
      if (CPU_ISSET(c, &self_)) mine = c;
    }
    for (int c = CPU_SETSIZE - 1; c >= 0 && other < 0; --c) {
      if (CPU_ISSET(c, &theirs_) && (c != mine) != same_cpu) other = c;
    }
    if (mine < 0 || other < 0) {
      why = same_cpu ? "no CPU both may run on" : "fewer than two CPUs";
      mine = other = -1;
      return;
    }
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(other, &one);
    if (::sched_setaffinity(redis_, sizeof one, &one) != 0) {
      why = "cannot set redis-server's CPU affinity";
      mine = other = -1;
      return;
    }
    CPU_ZERO(&one);
    CPU_SET(mine, &one);
    if (::sched_setaffinity(0, sizeof one, &one) != 0) {
      ::sched_setaffinity(redis_, sizeof theirs_, &theirs_);
      why = "cannot set the driver's CPU affinity";
      mine = other = -1;
      return;
    }
    pinned_ = true;
  }
  ~CrossPin() {
    if (!pinned_) return;
    // Workers are forked from this thread later: its mask must be whole again.
    if (::sched_setaffinity(0, sizeof self_, &self_) != 0) std::abort();
    ::sched_setaffinity(redis_, sizeof theirs_, &theirs_);
  }
  CrossPin(const CrossPin&) = delete;
  CrossPin& operator=(const CrossPin&) = delete;

  int mine = -1, other = -1;
  std::string why;

 private:
  pid_t redis_;
  cpu_set_t self_, theirs_;
  bool pinned_ = false;
};

// While it lives, a SCHED_IDLE thread spins on each of two CPUs: it runs only
// when nothing else wants the CPU, so the vCPU never halts and a wake-up
// across vCPUs is an IPI to a running vCPU, as in the contended scenarios
// (both vCPUs busy), not a wake-up of a halted one (its cost varies with the
// hypervisor). `ok` is false if SCHED_IDLE was refused (then nothing spins).
class IdleSpinners {
 public:
  IdleSpinners(int cpu_a, int cpu_b) {
    for (int cpu : {cpu_a, cpu_b}) threads_.emplace_back([this, cpu] { spin(cpu); });
    while (started_.load() < 2) std::this_thread::yield();
  }
  ~IdleSpinners() {
    stop_.store(true);
    for (auto& t : threads_) t.join();
  }
  IdleSpinners(const IdleSpinners&) = delete;
  IdleSpinners& operator=(const IdleSpinners&) = delete;
  bool ok() const { return refused_.load() == 0; }

 private:
  void spin(int cpu) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    sched_param p{};
    const bool idle = ::pthread_setaffinity_np(::pthread_self(), sizeof one, &one) == 0 &&
                      ::pthread_setschedparam(::pthread_self(), SCHED_IDLE, &p) == 0;
    if (!idle) refused_.fetch_add(1);
    started_.fetch_add(1);
    while (idle && !stop_.load(std::memory_order_relaxed)) {
    }
  }
  std::atomic<bool> stop_{false};
  std::atomic<int> started_{0}, refused_{0};
  std::vector<std::thread> threads_;
};

}  // namespace

struct Placement::Impl {
  Impl(Env& e, bool same_cpu) : pin(local_redis_pid(e), same_cpu) {
    if (pin.why.empty()) spinners = std::make_unique<IdleSpinners>(pin.mine, pin.other);
  }
  CrossPin pin;
  std::unique_ptr<IdleSpinners> spinners;
};

Placement::Placement(Env& e, bool same_cpu) : impl_(std::make_unique<Impl>(e, same_cpu)) {}
Placement::~Placement() = default;
int Placement::client_cpu() const { return impl_->pin.mine; }
int Placement::redis_cpu() const { return impl_->pin.other; }
bool Placement::kept_busy() const { return impl_->spinners && impl_->spinners->ok(); }
const std::string& Placement::why_not() const { return impl_->pin.why; }

Json RttRef::json() const {
  Json j = Json::object();
  j["method"] = method;
  j["vcpus_kept_busy"] = kept_busy;
  j["p10_us"] = p10;
  j["p50_us"] = p50;
  j["p90_us"] = p90;
  j["blocks"] = static_cast<long long>(block_med.size());
  j["pings_per_block"] = per_block;
  j["warmup_blocks_dropped"] = warmup;
  j["pinger_cpu"] = pinger_cpu;
  j["redis_cpu"] = redis_cpu;
  Json b = Json::array();
  for (double m : block_med) b.push(m);
  j["block_medians_us"] = b;
  return j;
}

std::string RttRef::text() const {
  std::string where = pinned()
                          ? fmt("PINGs from CPU %d to redis-server pinned to CPU %d for the measurement (a wake-up "
                                "across vCPUs every time), %s",
                                pinger_cpu, redis_cpu,
                                kept_busy ? "SCHED_IDLE spinners keeping both vCPUs from halting, as under contention"
                                          : "SCHED_IDLE refused: the vCPUs may halt between PINGs")
                          : "PINGs, " + method + " (same- and cross-vCPU blocks mixed: less stable)";
  return fmt(
      "RTT reference %.1f µs: the median of %zu blocks × %d %s; block medians p10 %.1f / p50 %.1f / p90 %.1f "
      "µs. Every \"× RTT\" figure but A's paired column is a multiple of it.",
      p50, block_med.size(), per_block, where.c_str(), p10, p50, p90);
}

RttRef measure_rtt_reference(Env& e, int blocks, int warmup) {
  RttRef ref;
  ref.per_block = e.pings;
  ref.warmup = warmup;
  {
    Placement across(e, false);
    ref.pinger_cpu = across.client_cpu();
    ref.redis_cpu = across.redis_cpu();
    ref.kept_busy = across.kept_busy();
    ref.method = across.why_not().empty() ? "cross-vCPU, pinned" : "unpinned: " + across.why_not();
    for (int b = 0; b < warmup + blocks; ++b) {
      const double m = median(ping_us(e, e.pings));
      if (b >= warmup) ref.block_med.push_back(m);
    }
  }
  ref.p10 = quantile(ref.block_med, 0.1);
  ref.p50 = median(ref.block_med);
  ref.p90 = quantile(ref.block_med, 0.9);
  return ref;
}

void flushall(Env& e) {
  e.admin->cmd({"FLUSHALL"});
  load_fairlock_scripts(*e.admin);
}

}  // namespace fbench
