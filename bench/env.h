#pragma once
// What every scenario of the driver works with: the options, the admin and
// PING connections to the redis-server, and the Report it records into.
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common.h"
#include "report.h"

namespace fbench {

constexpr std::int64_t kMs = 1000000;

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
  std::unique_ptr<Redis> pinger;  // the RTT unit: PING on its own connection
  Report report;
  int run_counter = 0;

  bool wants(char s) const { return only.empty() || only.count(s) > 0; }
  std::string url() const { return "redis://" + host + ":" + std::to_string(port); }
  std::string tls_url() const { return "rediss://" + host + ":" + std::to_string(tls_port); }
  void fail(const std::string& what) { report.fail(what); }
};

// Progress on stdout, flushed: the driver runs for minutes.
void say(const std::string& s);
// `n` PINGs on the pinger connection: their round-trip times in µs.
std::vector<double> ping_us(Env& e, int n);
// FLUSHALL, then the library's scripts loaded again.
void flushall(Env& e);

}  // namespace fbench
