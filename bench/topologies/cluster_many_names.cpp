// Part 2 of fairlock_cluster_bench (cluster.h): many names on one cluster,
// 8 worker processes x 2 threads looping lock+unlock on random names of 64.
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "child_process.h"
#include "cluster.h"

namespace fcluster {

namespace {

using fairlock::test::Process;

std::string self_exe() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) throw std::runtime_error("readlink /proc/self/exe");
  return std::string(buf, static_cast<std::size_t>(n));
}

// Starts the workers and waits until each says "ready".
std::vector<std::unique_ptr<Process>> start(const fairlock::test::RedisCluster& c, ms run, int round) {
  std::vector<std::unique_ptr<Process>> workers;
  for (int p = 0; p < kProcs; ++p) {
    const std::vector<std::string> args = {"worker",
                                           c.url(),
                                           std::to_string(kNames),
                                           std::to_string(kThreads),
                                           std::to_string(run.count()),
                                           std::to_string(round * kProcs + p + 1)};
    workers.push_back(std::make_unique<Process>(self_exe(), args));
  }
  for (auto& w : workers)
    if (!w->expect("ready", ms(60000))) throw std::runtime_error("a worker did not start");
  return workers;
}

}  // namespace

void many_round(const fairlock::test::RedisCluster& c, ms run, int round, Many& into) {
  auto workers = start(c, run, round);
  const Servers masters = masters_of(c);
  const Sample before = counters(masters);
  const auto t0 = Clock::now();
  for (auto& w : workers) w->send("go");
  long long grants = 0;
  for (auto& w : workers) {
    const auto line = w->expect("grants ", run + ms(60000));
    if (!line) throw std::runtime_error("a worker did not finish");
    grants += std::stoll(line->substr(7));
  }
  const double seconds = seconds_since(t0);
  add(into.sum, minus(counters(masters), before));
  for (auto& w : workers)
    if (w->finish(ms(10000)) != 0) throw std::runtime_error("a worker failed");
  into.rate.push_back(static_cast<double>(grants) / seconds);
  into.grants += grants;
  into.seconds += seconds;
}

void print_many(const std::string& label, const fairlock::test::RedisCluster& c, const Many& m,
                const std::vector<double>& idle) {
  std::vector<int> names(m.sum.size(), 0);
  for (int i = 0; i < kNames; ++i) ++names[static_cast<std::size_t>(owner_of(c, many_name(i)))];
  long long scripts = 0, publish = 0, spublish = 0;
  for (const auto& s : m.sum) scripts += s.scripts, publish += s.publish, spublish += s.spublish;
  const auto g = static_cast<double>(m.grants);
  std::printf(
      "%s: %.0f grants/s (median of %zu rounds; %lld grants in %.1f s); per grant: %.2f script calls, %.2f "
      "PUBLISH, %.2f SPUBLISH\n",
      label.c_str(), median(m.rate), m.rate.size(), m.grants, m.seconds, static_cast<double>(scripts) / g,
      static_cast<double>(publish) / g, static_cast<double>(spublish) / g);
  std::printf("  %-6s %6s %10s %12s %12s %12s %12s %14s\n", "master", "names", "scripts %", "commands/s", "CPU ms/s",
              "less idle", "grants/s", "CPU us/grant");
  for (std::size_t i = 0; i < m.sum.size(); ++i) {
    const Counters& s = m.sum[i];
    const double busy = s.cpu_s - idle[i] * m.seconds;
    const double share = static_cast<double>(s.scripts) / static_cast<double>(scripts);  // of the grants
    std::printf("  %-6zu %6d %9.1f%% %12.0f %12.1f %12.1f %12.0f %14.2f\n", i, names[i], 100.0 * share,
                static_cast<double>(s.commands) / m.seconds, s.cpu_s * 1e3 / m.seconds, busy * 1e3 / m.seconds,
                g * share / m.seconds, busy * 1e6 / (g * share));
  }
}

}  // namespace fcluster
