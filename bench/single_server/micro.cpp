// Google Benchmark micro-benchmarks: the sequential, single-process parts of
// the hot path, where Google Benchmark's repetition statistics fit. The
// cross-process scenarios are in the driver (fairlock_bench run).
//   FAIRLOCK_BENCH_PORT=<port> fairlock_microbench [--benchmark_* flags]
// (bench/run.sh runs it against the redis-server it started.)
#include <benchmark/benchmark.h>
#include <fairlock/fairlock.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "common.h"
#include "protocol/formats.h"  // src/: new_member, the per-claim member
#include "protocol/keys.h"     // src/: Keys
#include "systems.h"

namespace {

int port() {
  const char* p = std::getenv("FAIRLOCK_BENCH_PORT");
  return p ? std::atoi(p) : 6379;
}

std::string url() { return "redis://127.0.0.1:" + std::to_string(port()); }

// PING on one connection: the unit of the driver's ratios.
void BM_PingRTT(benchmark::State& state) {
  fbench::Redis c("127.0.0.1", port());
  for ([[maybe_unused]] auto _ : state) {
    fbench::Reply r = c.cmd({"PING"});
    benchmark::DoNotOptimize(r.get());
  }
}
BENCHMARK(BM_PingRTT)->UseRealTime();

// Scenario A through the library: FairLock lock() + unlock(), uncontended.
void BM_FairLock_LockUnlock(benchmark::State& state) {
  fairlock::Options o;
  o.url = url();
  fairlock::Client client(o);
  fairlock::FairLock lock(client, "micro:fair");
  for ([[maybe_unused]] auto _ : state) {
    lock.lock();
    lock.unlock();
  }
}
BENCHMARK(BM_FairLock_LockUnlock)->UseRealTime();

// The same two scripts called directly: the library's client-side cost is
// the difference with BM_FairLock_LockUnlock.
void BM_RawScripts_AcquireRelease(benchmark::State& state) {
  fbench::Redis c("127.0.0.1", port());
  fbench::load_fairlock_scripts(c);
  fbench::RawKeys k("fairlock", "micro:raw");
  std::uint64_t n = 0;
  for ([[maybe_unused]] auto _ : state) {
    std::string m = fbench::fake_member('n', 0xbe11ULL, ++n, 10000);
    fbench::Reply a = c.cmd(fbench::raw_acquire_argv(k, m, 1, 10000, 5000, 'q'));
    fbench::Reply r = c.cmd(fbench::raw_release_argv(k, m, 1));
    benchmark::DoNotOptimize(r.get());
  }
}
BENCHMARK(BM_RawScripts_AcquireRelease)->UseRealTime();

// The minimal unfair lock, uncontended.
void BM_Unfair_LockUnlock(benchmark::State& state) {
  fbench::Redis c("127.0.0.1", port());
  const std::string sha = fbench::load_unlock_script(c);
  fbench::RtCounter rt;
  for ([[maybe_unused]] auto _ : state) {
    const std::int64_t give_up = fbench::now_ns() + 10000000000LL;  // uncontended: never reached
    if (!fbench::unfair_lock(
            c, "micro:unfair", "tok", [&] { return fbench::now_ns() > give_up; }, rt)) {
      state.SkipWithError("unfair lock not granted within 10 s");
      break;
    }
    fbench::unfair_unlock(c, sha, "micro:unfair", "tok", rt);
  }
}
BENCHMARK(BM_Unfair_LockUnlock)->UseRealTime();

// Client-side CPU only (no Redis round trip).
void BM_NewMember(benchmark::State& state) {
  fairlock::Options o;
  o.url = url();
  fairlock::Client client(o);
  for ([[maybe_unused]] auto _ : state)
    benchmark::DoNotOptimize(
        fairlock::detail::new_member(fairlock::Notify::publish, client.id(), std::chrono::milliseconds(10000)));
}
BENCHMARK(BM_NewMember);

void BM_Keys(benchmark::State& state) {
  for ([[maybe_unused]] auto _ : state) {
    fairlock::detail::Keys k("fairlock", "orders:42");
    benchmark::DoNotOptimize(k.seq.data());
  }
}
BENCHMARK(BM_Keys);

void BM_FormatAcquireCommand(benchmark::State& state) {
  fbench::RawKeys k("fairlock", "orders:42");
  auto argv = fbench::raw_acquire_argv(k, fbench::fake_member('p', 1, 2, 10000), 1, 10000, 5000, 'q');
  std::vector<const char*> p;
  std::vector<size_t> l;
  for (const auto& a : argv) {
    p.push_back(a.data());
    l.push_back(a.size());
  }
  for ([[maybe_unused]] auto _ : state) {
    char* out = nullptr;
    int n = redisFormatCommandArgv(&out, static_cast<int>(p.size()), p.data(), l.data());
    benchmark::DoNotOptimize(n);
    redisFreeCommand(out);
  }
}
BENCHMARK(BM_FormatAcquireCommand);

}  // namespace

BENCHMARK_MAIN();
