// The benchmark driver. See bench/README.md for what each scenario measures
// and how; bench/run.sh is the one command that builds, starts a
// redis-server and calls `fairlock_bench run`. The scenarios are in
// scenario_*.cpp, the worker processes' runs in harness.cpp, the outputs in
// report.cpp.
#include "driver.h"

#include <fairlock/fairlock.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "env.h"
#include "harness.h"
#include "scenarios.h"

namespace fbench {
namespace {

void parse_args(Env& e, int argc, char** argv) {
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error("missing value for " + a);
      return argv[++i];
    };
    if (a == "--port") e.port = std::atoi(next().c_str());
    else if (a == "--smoke") e.smoke = true;
    else if (a == "--json") e.json_path = next();
    else if (a == "--md") e.md_path = next();
    else if (a == "--chart-data") e.chart_dir = next();
    else if (a == "--micro") e.micro_json = next();
    else if (a == "--git-rev") e.git_rev = next();
    else if (a == "--pool-size") e.pool_size = std::atoi(next().c_str());
    else if (a == "--tls-port") e.tls_port = std::atoi(next().c_str());
    else if (a == "--cacert") e.cacert = next();
    else if (a == "--ws") {
      std::stringstream in(next());
      std::string w;
      while (std::getline(in, w, ',')) e.ws.push_back(std::atoi(w.c_str()));
    } else if (a == "--only") {
      for (char c : next()) e.only.insert(static_cast<char>(std::toupper(c)));
    } else {
      throw std::runtime_error("unknown argument " + a);
    }
  }
  if (e.port <= 0)
    throw std::runtime_error(
        "usage: fairlock_bench run --port P [--smoke] [--json F] [--md F] "
        "[--chart-data DIR] [--micro F] [--only ABCDEFGHT] [--tls-port P --cacert F]");
}

// The rest of the set-up: this executable (the workers run it), the chart
// directory, the connections.
void set_up(Env& e) {
  if (e.chart_dir.empty()) e.chart_dir = "/tmp";
  char self[4096];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) throw std::runtime_error("readlink /proc/self/exe failed");
  self[n] = '\0';
  e.exe = self;
  e.chart_dir += "/";
  if (e.smoke) e.pings = 100;
  install_signal_handlers();
  e.admin = std::make_unique<Redis>(e.host, e.port, 30000);
  e.pinger = std::make_unique<Redis>(e.host, e.port, 5000);
}

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown";
}

std::string redis_version(Env& e) {
  Reply r = e.admin->cmd({"INFO", "server"});
  std::string info = reply_str(r.get());
  auto pos = info.find("redis_version:");
  if (pos == std::string::npos) return "";
  return info.substr(pos + 14, info.find('\r', pos) - pos - 14);
}

// The machine, for the JSON and the chart's subtitle.
Json machine(Env& e) {
  Json m = Json::object();
  m["nproc"] = static_cast<long long>(sysconf(_SC_NPROCESSORS_ONLN));
  const std::string cpu = cpu_model();
  m["cpu"] = cpu;
  utsname u{};
  if (::uname(&u) == 0) m["kernel"] = std::string(u.sysname) + " " + u.release;
  {
    std::ifstream f("/proc/meminfo");
    std::string k;
    long long kb = 0;
    f >> k >> kb;
    m["mem_gb"] = static_cast<double>(kb) / 1024 / 1024;
  }
  const std::string version = redis_version(e);
  if (!version.empty()) m["redis_version"] = version;
  m["hiredis_version"] = fmt("%d.%d.%d", HIREDIS_MAJOR, HIREDIS_MINOR, HIREDIS_PATCH);
  m["fairlock_version"] = FAIRLOCK_VERSION_STRING;
  std::string sub = fmt("%ld CPUs (%s), redis %s, hiredis %d.%d.%d, loopback TCP; fairlock %s %s",
                        sysconf(_SC_NPROCESSORS_ONLN), cpu.c_str(), version.empty() ? "?" : version.c_str(),
                        HIREDIS_MAJOR, HIREDIS_MINOR, HIREDIS_PATCH, FAIRLOCK_VERSION_STRING, e.git_rev.c_str());
  for (char& c : sub) {
    if (c == '\'' || c == '"' || c == '\\') c = ' ';
  }
  e.report.chart("subtitle.txt", sub);
  return m;
}

void run_scenarios(Env& e) {
  struct Step {
    char id;
    void (*fn)(Env&);
  };
  const Step steps[] = {{'A', scenario_A}, {'B', scenario_B}, {'C', scenario_C}, {'D', scenario_D}, {'E', scenario_E},
                        {'F', scenario_F}, {'G', scenario_G}, {'H', scenario_H}, {'T', scenario_T}};
  for (const auto& s : steps) {
    if (!e.wants(s.id)) continue;
    try {
      s.fn(e);
    } catch (const std::exception& ex) {
      e.fail(fmt("scenario %c: %s", s.id, ex.what()));
    }
  }
  e.admin->cmd({"FLUSHALL"});
}

// Targets and timing into the report; prints the tables and writes the files.
int finish(Env& e, std::int64_t t0) {
  Report& rep = e.report;
  rep.close_targets();
  rep.out["duration_s"] = static_cast<double>(now_ns() - t0) / 1e9;
  if (!e.micro_json.empty()) {
    std::string micro = read_text(e.micro_json);
    if (!micro.empty() && micro.find('{') != std::string::npos) rep.out["google_benchmark"] = Json::raw(micro);
  }
  // The reference again, after the last scenario: how far the machine drifted
  // (reported; the figures keep the one measured before the first scenario).
  const RttRef end = measure_rtt_reference(e, e.rtt.block_med.size() > 10 ? 10 : 4, e.rtt.warmup);
  rep.out["rtt_reference_end_check"] = end.json();
  rep.md_prepend(e.rtt.text() +
                 fmt(" Measured again after the last scenario: p10 %.1f / p50 %.1f / p90 %.1f µs (%zu blocks).\n",
                     end.p10, end.p50, end.p90, end.block_med.size()));
  std::string header = fmt("Run %s (%s mode, %.0f s).\n", rep.out["date"].dump().c_str(), e.smoke ? "smoke" : "full",
                           static_cast<double>(now_ns() - t0) / 1e9);
  std::printf("\n%s%s\n", header.c_str(), rep.markdown().c_str());
  rep.write(e.json_path, e.md_path, e.chart_dir);
  if (!rep.broken().empty()) {
    std::fprintf(stderr, "\n%zu benchmark error(s):\n", rep.broken().size());
    for (const auto& b : rep.broken()) std::fprintf(stderr, "  %s\n", b.c_str());
    return 1;
  }
  return 0;
}

}  // namespace

int driver_main(int argc, char** argv) {
  Env e;
  parse_args(e, argc, argv);
  set_up(e);
  const std::int64_t t0 = now_ns();
  Json& out = e.report.out;
  out["schema"] = 1;
  out["mode"] = e.smoke ? "smoke" : "full";
  out["git_rev"] = e.git_rev;
  {
    time_t now = ::time(nullptr);
    char buf[64];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    out["date"] = buf;
  }
  out["machine"] = machine(e);
  say(fmt("fairlock benchmark (%s) against redis on %s:%d\n", e.smoke ? "smoke" : "full", e.host.c_str(), e.port));
  e.rtt = measure_rtt_reference(e, e.smoke ? 8 : 20, e.smoke ? 2 : 5);
  out["rtt_reference"] = e.rtt.json();
  say(e.rtt.text() + "\n");
  run_scenarios(e);
  return finish(e, t0);
}

}  // namespace fbench
