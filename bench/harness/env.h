#pragma once
// What every scenario of the driver works with: the options, the admin and
// PING connections to the redis-server, and the Report it records into.
#include <cmath>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common.h"
#include "report.h"

namespace fbench {

constexpr std::int64_t kMs = 1000000;

// The run's one RTT reference: the unit of every "× RTT" figure but A's paired
// column. Blocks of PINGs from a driver thread pinned to one CPU to the
// redis-server's main thread pinned, for the measurement only, to another:
// always a wake-up across vCPUs, to a vCPU that is running (see
// bench/README.md, Method).
struct RttRef {
  double p10 = NAN, p50 = NAN, p90 = NAN;  // of the block medians, µs
  std::vector<double> block_med;           // µs, in measurement order (warm-up blocks excluded)
  int per_block = 0, warmup = 0;
  int pinger_cpu = -1, redis_cpu = -1;  // -1: not pinned
  std::string method;                   // "cross-vCPU, pinned" or "unpinned: <why>"
  bool kept_busy = false;               // SCHED_IDLE spinners kept both CPUs from halting
  bool pinned() const { return redis_cpu >= 0; }
  Json json() const;
  std::string text() const;  // one line for the report's header
};

struct Env {
  std::string host = "127.0.0.1";
  int port = 0;
  bool smoke = false;
  std::string exe, json_path, md_path, chart_dir, micro_json, git_rev;
  std::set<char> only;
  std::vector<int> ws;  // --ws: restrict B's participant counts (development)
  int pool_size = 0;    // --pool-size: the workers' connection pool (development; 0 = library default)
  int tls_port = 0;     // the same server's TLS port (scenario T), 0 if none
  std::string cacert;   // the CA that signed its certificate
  std::int64_t tol_ns = 2 * kMs;
  int pings = 300;
  std::unique_ptr<Redis> admin;   // INFO, CONFIG, FLUSHALL
  std::unique_ptr<Redis> pinger;  // PING on its own connection
  RttRef rtt;                     // the run's RTT reference, measured before the first scenario
  Report report;
  int run_counter = 0;

  bool wants(char s) const { return only.empty() || only.count(s) > 0; }
  std::string url() const { return "redis://" + host + ":" + std::to_string(port); }
  std::string tls_url() const { return "rediss://" + host + ":" + std::to_string(tls_port); }
  void fail(const std::string& what) { report.fail(what); }
};

// While it lives, the calling thread and the local redis-server's main
// thread are pinned to two different CPUs (or, `same_cpu`, to one), with a
// SCHED_IDLE spinner on each keeping the vCPUs from halting: every round
// trip is then a wake-up across running vCPUs (or none at all), not a mix of
// both (bench/README.md, Method). Threads the caller starts meanwhile
// inherit its pinned mask. Without a local redis-server, two CPUs or the
// permission to pin, nothing changes and why_not() says why.
class Placement {
 public:
  Placement(Env& e, bool same_cpu);
  ~Placement();
  Placement(const Placement&) = delete;
  Placement& operator=(const Placement&) = delete;
  int client_cpu() const;  // -1 if not pinned
  int redis_cpu() const;   // -1 if not pinned
  bool kept_busy() const;  // the spinners run
  const std::string& why_not() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Progress on stdout, flushed: the driver runs for minutes.
void say(const std::string& s);
// `n` PINGs on the pinger connection: their round-trip times in µs.
std::vector<double> ping_us(Env& e, int n);
// The RTT reference: `blocks` blocks of e.pings PINGs after `warmup` blocks
// that are dropped (the first blocks after an idle spell are slower).
RttRef measure_rtt_reference(Env& e, int blocks, int warmup);
// FLUSHALL, then the library's scripts loaded again.
void flushall(Env& e);

}  // namespace fbench
