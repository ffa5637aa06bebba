// T. TLS against plain TCP on the same server: uncontended lock+unlock
// pairs of one client each, in interleaved blocks, and W participants on
// one lock in interleaved rounds. Reports the ratios TLS / plain.
#include <fairlock/fairlock.h>

#include <map>
#include <memory>

#include "harness.h"
#include "scenarios.h"
#include "summary.h"

namespace fbench {
namespace {

struct Pairs {
  std::unique_ptr<fairlock::Client> client;
  std::unique_ptr<fairlock::FairLock> lock;
  std::vector<double> block_medians;
};

Pairs pairs_over(Env& e, bool tls) {
  fairlock::Options o;
  o.url = tls ? e.tls_url() : e.url();
  if (tls) o.tls.ca_file = e.cacert;
  Pairs p;
  p.client = std::make_unique<fairlock::Client>(o);
  p.lock = std::make_unique<fairlock::FairLock>(*p.client, tls ? "bench:T:tls" : "bench:T:plain");
  return p;
}

// One block of `n` pairs: their median wall time in µs.
double block(Pairs& p, int n) {
  std::vector<double> us;
  for (int i = 0; i < n; ++i) {
    const std::int64_t t0 = now_ns();
    p.lock->lock();
    p.lock->unlock();
    us.push_back(static_cast<double>(now_ns() - t0) / 1e3);
  }
  return median(us);
}

Measured contended(Env& e, bool tls, int W, int dur) {
  RunSpec s;
  s.system = "fair";
  s.tls = tls;
  Layout L = layout(W);
  s.procs = L.procs;
  s.threads = L.threads;
  s.duration_ms = dur;
  return measure(e, s);
}

void report_T(Env& e, Pairs& plain, Pairs& tls, std::map<bool, std::vector<Measured>>& runs, int W) {
  const double pair_plain = median(plain.block_medians), pair_tls = median(tls.block_medians);
  Summary sp = summarise(runs[false]), st = summarise(runs[true]);
  e.report.section(fmt("T. TLS against plain TCP, same server and client stack (interleaved; W = %d)", W));
  e.report.table({"", "plain", "TLS", "TLS / plain"}, "lrrr");
  e.report.md(fmt("| uncontended lock+unlock (median of block medians) | %.0f µs | %.0f µs | %.2f |\n", pair_plain,
                  pair_tls, pair_tls / pair_plain));
  e.report.md(fmt("| W = %d grants/s | %s | %s | %.2f |\n", W, thousands(sp.grants_per_s).c_str(),
                  thousands(st.grants_per_s).c_str(), st.grants_per_s / sp.grants_per_s));
  e.report.md(
      fmt("| W = %d handoff p50 | %.0f µs | %.0f µs | %.2f |\n", W, sp.p50_us, st.p50_us, st.p50_us / sp.p50_us));
  Json j = Json::object();
  j["W"] = W;
  j["pair_us_plain"] = pair_plain;
  j["pair_us_tls"] = pair_tls;
  j["pair_ratio"] = pair_tls / pair_plain;
  j["plain"] = summary_json(sp);
  j["tls"] = summary_json(st);
  j["grants_ratio"] = st.grants_per_s / sp.grants_per_s;
  e.report.out["T_tls"] = j;
}

}  // namespace

void scenario_T(Env& e) {
  if (e.tls_port <= 0) {
    e.fail("T: no TLS port (bench/run.sh starts the server with one)");
    return;
  }
  const int W = e.smoke ? 4 : 16;
  say(fmt("\n== T. TLS against plain TCP (uncontended, W=%d)\n", W));
  flushall(e);
  Pairs plain = pairs_over(e, false), tls = pairs_over(e, true);
  const int blocks = e.smoke ? 4 : 20, per_block = e.smoke ? 50 : 300;
  for (int b = 0; b < blocks; ++b) {
    Pairs& first = b % 2 == 0 ? plain : tls;
    Pairs& second = b % 2 == 0 ? tls : plain;
    first.block_medians.push_back(block(first, per_block));
    second.block_medians.push_back(block(second, per_block));
  }
  std::map<bool, std::vector<Measured>> runs;
  const int rounds = e.smoke ? 1 : 3, dur = e.smoke ? 600 : 3000;
  for (int r = 0; r < rounds; ++r) {
    for (int k = 0; k < 2; ++k) {
      const bool over_tls = (k == 0) == (r % 2 == 1);
      runs[over_tls].push_back(contended(e, over_tls, W, dur));
    }
  }
  report_T(e, plain, tls, runs, W);
}

}  // namespace fbench
