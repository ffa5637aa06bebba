// A redis-server's counters from INFO cpu and INFO commandstats, and small
// helpers (cluster.h).
#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "cluster.h"

namespace fcluster {

namespace {

// The number after `field=` in a commandstats line ("calls=12,usec=..."); 0 if absent.
long long field(const std::string& line, const std::string& name) {
  const auto at = line.find(name + "=");
  return at == std::string::npos ? 0 : std::atoll(line.c_str() + at + name.size() + 1);
}

// One line of INFO into `c`.
void add_line(const std::string& line, Counters& c) {
  const auto colon = line.find(':');
  if (colon == std::string::npos) return;
  const std::string key = line.substr(0, colon);
  if (key == "used_cpu_user" || key == "used_cpu_sys") {
    c.cpu_s += std::atof(line.c_str() + colon + 1);
    return;
  }
  if (key.rfind("cmdstat_", 0) != 0 || key == "cmdstat_info") return;
  const long long calls = field(line, "calls");
  c.commands += calls;
  if (key == "cmdstat_fcall" || key == "cmdstat_evalsha") c.scripts += calls;
  if (key == "cmdstat_publish") c.publish += calls;
  if (key == "cmdstat_spublish") c.spublish += calls;
}

// One server's counters.
Counters counters(const fairlock::test::RedisServer& server) {
  Counters c;
  for (const char* section : {"cpu", "commandstats"}) {
    std::istringstream in(server.cmd({"INFO", section}));
    std::string line;
    while (std::getline(in, line)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      add_line(line, c);
    }
  }
  return c;
}

}  // namespace

Counters Counters::operator-(const Counters& o) const {
  return {cpu_s - o.cpu_s, scripts - o.scripts, commands - o.commands, publish - o.publish, spublish - o.spublish};
}

Counters& Counters::operator+=(const Counters& o) {
  cpu_s += o.cpu_s;
  scripts += o.scripts;
  commands += o.commands;
  publish += o.publish;
  spublish += o.spublish;
  return *this;
}

Sample counters(const Servers& servers) {
  Sample out;
  for (const auto* s : servers) out.push_back(counters(*s));
  return out;
}

Sample minus(const Sample& after, const Sample& before) {
  Sample out;
  for (std::size_t i = 0; i < after.size(); ++i) out.push_back(after[i] - before[i]);
  return out;
}

void add(Sample& sum, const Sample& more) {
  if (sum.empty()) sum.resize(more.size());
  for (std::size_t i = 0; i < more.size(); ++i) sum[i] += more[i];
}

double median(std::vector<double> v) { return percentile(std::move(v), 0.5); }

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string loadavg() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

Servers masters_of(const fairlock::test::RedisCluster& c) {
  Servers out;
  for (int i = 0; i < c.size(); ++i) out.push_back(&c.node(i));
  return out;
}

int owner_of(const fairlock::test::RedisCluster& c, const std::string& name) {
  return c.master_of_slot(c.slot_of("{" + name + "}"));
}

fairlock::Options options(const std::string& url) {
  fairlock::Options o;
  o.url = url;
  return o;
}

}  // namespace fcluster
