// G. Wake transports: publish, keyspace notifications and polling, W
// processes on one lock, in interleaved rounds.
#include <map>

#include "harness.h"
#include "scenarios.h"
#include "summary.h"

namespace fbench {
namespace {

const std::vector<std::string> kModes = {"publish", "keyspace", "poll"};

Measured run_mode(Env& e, const std::string& mode, int W, int dur) {
  if (mode == "keyspace") e.admin->cmd({"CONFIG", "SET", "notify-keyspace-events", "K$"});
  RunSpec s;
  s.system = "fair";
  s.notify = mode;
  s.procs = W;
  s.threads = 1;
  s.duration_ms = dur;
  Measured m = measure(e, s);
  if (mode == "keyspace") e.admin->cmd({"CONFIG", "SET", "notify-keyspace-events", ""});
  for (const auto& got : m.modes) {
    if (got != mode) e.fail("G: a worker asked for " + mode + " but runs " + got);
  }
  return m;
}

void report_G(Env& e, std::map<std::string, std::vector<Measured>>& runs, int W, int rounds) {
  Json jg = Json::object();
  jg["W"] = W;
  e.report.section(
      fmt("G. Wake transports, W = %d processes on one lock (medians of %d interleaved rounds)", W, rounds));
  e.report.table({"transport", "handoff p50", "handoff p99", "grants/s", "round trips/grant", "Redis cmds/grant",
                  "wake-ups per grant: signal / keyspace / timer / heartbeat"},
                 "lrrrrrr");
  std::string dat;
  for (const auto& mode : kModes) {
    Summary s = summarise(runs[mode]);
    Json j = summary_json(s);
    Json jr = Json::array();
    push_runs(jr, runs[mode]);
    j["runs"] = jr;
    jg[mode] = j;
    e.report.md(fmt("| %s | %s | %s | %s | %.2f | %.1f | %.2f / %.2f / %.2f / %.2f |\n", mode.c_str(),
                    lat_cell(s.p50_us, s.p50_rtt).c_str(), lat_cell(s.p99_us, s.p99_rtt).c_str(),
                    thousands(s.grants_per_s).c_str(), s.rt_pg, s.cmds_pg, s.wakes_signal_pg, s.wakes_keyspace_pg,
                    s.wakes_timer_pg, s.wakes_heartbeat_pg));
    dat += fmt("\"%s\" %.4f %.4f\n", mode.c_str(), s.p50_rtt, s.p99_rtt);
  }
  e.report.chart("g.dat", dat);
  e.report.out["G_transports"] = jg;
}

}  // namespace

void scenario_G(Env& e) {
  const int W = e.smoke ? 4 : 16;
  say(fmt("\n== G. Wake transports at W=%d\n", W));
  flushall(e);
  const int rounds = e.smoke ? 1 : 3;
  const int dur = e.smoke ? 600 : 3000;
  std::map<std::string, std::vector<Measured>> runs;
  for (int r = 0; r < rounds; ++r) {
    for (std::size_t k = 0; k < kModes.size(); ++k) {
      const std::string& mode = kModes[(k + static_cast<std::size_t>(r)) % kModes.size()];
      runs[mode].push_back(run_mode(e, mode, W, dur));
    }
  }
  report_G(e, runs, W, rounds);
}

}  // namespace fbench
