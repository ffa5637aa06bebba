#include "summary.h"

#include <algorithm>

namespace fbench {
namespace {

// The per-run samples whose medians a Summary reports.
struct Samples {
  std::vector<double> ping, gps, cps, p50, p99, p50r, p99r, w99, cmds, cpu, rt, ws, wk, wt, wh, scr, arr;
  long long strict = 0, gm1 = 0;  // strict overtakes; grants - 1, summed
};

void add_latencies(Samples& x, Summary& s, const Measured& r) {
  x.ping.push_back(r.round_ping_us);
  s.rtt_ref_us = r.rtt_ref_us;
  x.gps.push_back(r.m.grants_per_s);
  x.cps.push_back(r.m.cross_per_s);
  if (!std::isnan(r.m.handoff_p50_us)) {
    x.p50.push_back(r.m.handoff_p50_us);
    x.p99.push_back(r.m.handoff_p99_us);
    x.p50r.push_back(r.m.handoff_p50_us / r.rtt_ref_us);
    x.p99r.push_back(r.m.handoff_p99_us / r.rtt_ref_us);
  }
  x.w99.push_back(r.m.wait_p99_ms);
  s.wait_max_ms = std::max(s.wait_max_ms, r.m.wait_max_ms);
  x.cmds.push_back(r.cmds_pg);
  x.cpu.push_back(r.cpu_pg);
  x.rt.push_back(r.rt_pg);
  x.scr.push_back(r.cmd_us_pg);
  x.arr.push_back(r.m.arrival_delay_p99_ms);
  const auto g = static_cast<double>(r.m.grants);
  x.ws.push_back(static_cast<double>(r.tot.wakes_signal) / g);
  x.wk.push_back(static_cast<double>(r.tot.wakes_keyspace) / g);
  x.wt.push_back(static_cast<double>(r.tot.wakes_timer) / g);
  x.wh.push_back(static_cast<double>(r.tot.wakes_heartbeat) / g);
}

void add_counts(Samples& x, Summary& s, const Measured& r) {
  s.arrival_max_ms = std::max(s.arrival_max_ms, r.m.arrival_delay_max_ms);
  s.margin_max_ms = std::max(s.margin_max_ms, r.m.overtake_margin_max_ms);
  s.later_arrival += r.m.overtakes_later_arrival;
  s.fifo_violations += r.m.overtakes_fifo_violation;
  s.unclassified += r.m.overtakes_unclassified;
  s.grants += r.m.grants;
  x.gm1 += std::max(0LL, r.m.grants - 1);
  s.overtakes += r.m.overtakes;
  x.strict +=
      static_cast<long long>(std::llround(r.m.overtakes_strict_per_100 * static_cast<double>(r.m.grants) / 100));
  s.regrabs += r.m.regrabs;
  s.regrabs_waiting += r.m.regrabs_waiting;
  s.inversions += r.m.fence_inversions;
  s.max_holders = std::max(s.max_holders, r.m.max_holders);
}

void take_medians(const Samples& x, Summary& s) {
  s.round_ping_us = median(x.ping);
  s.grants_per_s = median(x.gps);
  s.cross_per_s = median(x.cps);
  s.p50_us = median(x.p50);
  s.p99_us = median(x.p99);
  s.p50_rtt = median(x.p50r);
  s.p99_rtt = median(x.p99r);
  s.wait_p99_ms = median(x.w99);
  s.cmds_pg = median(x.cmds);
  s.cpu_pg = median(x.cpu);
  s.rt_pg = median(x.rt);
  s.cmd_us_pg = median(x.scr);
  s.arrival_p99_ms = median(x.arr);
  s.wakes_signal_pg = median(x.ws);
  s.wakes_keyspace_pg = median(x.wk);
  s.wakes_timer_pg = median(x.wt);
  s.wakes_heartbeat_pg = median(x.wh);
}

void take_shares(const Samples& x, Summary& s) {
  s.strict_overtakes = x.strict;
  if (s.grants > 0) {
    s.overtakes_per_100 = 100.0 * static_cast<double>(s.overtakes) / static_cast<double>(s.grants);
    s.strict_per_100 = 100.0 * static_cast<double>(x.strict) / static_cast<double>(s.grants);
  }
  if (x.gm1 > 0) {
    s.regrab_pct = 100.0 * static_cast<double>(s.regrabs) / static_cast<double>(x.gm1);
    s.regrab_waiting_pct = 100.0 * static_cast<double>(s.regrabs_waiting) / static_cast<double>(x.gm1);
  }
}

// The run's shape and its client- and fairness-side figures.
void run_figures_json(Json& j, const Measured& r) {
  j["system"] = r.spec.system;
  j["notify"] = r.spec.notify;
  j["W"] = r.spec.W();
  j["processes"] = r.spec.procs;
  j["threads_per_process"] = r.spec.threads;
  j["permits"] = r.spec.permits;
  j["ok"] = r.ok;
  j["window_s"] = r.m.window_s;
  j["round_ping_us"] = r.round_ping_us;
  j["rtt_ref_us"] = r.rtt_ref_us;
  j["grants"] = r.m.grants;
  j["grants_per_s"] = r.m.grants_per_s;
  j["other_participant_grants"] = r.m.cross;
  j["other_participant_grants_per_s"] = r.m.cross_per_s;
  j["handoffs"] = r.m.handoffs;
  j["handoff_p50_us"] = r.m.handoff_p50_us;
  j["handoff_p99_us"] = r.m.handoff_p99_us;
  j["handoff_p50_rtt"] = r.m.handoff_p50_us / r.rtt_ref_us;
  j["handoff_p99_rtt"] = r.m.handoff_p99_us / r.rtt_ref_us;
  j["overtakes"] = r.m.overtakes;
  j["overtakes_per_100"] = r.m.overtakes_per_100;
  j["overtakes_strict_per_100"] = r.m.overtakes_strict_per_100;
  j["self_regrabs"] = r.m.regrabs;
  j["self_regrab_pct"] = r.m.regrab_pct;
  j["self_regrabs_while_others_wait"] = r.m.regrabs_waiting;
  j["self_regrab_while_others_wait_pct"] = r.m.regrab_waiting_pct;
  j["wait_p50_ms"] = r.m.wait_p50_ms;
  j["wait_p99_ms"] = r.m.wait_p99_ms;
  j["wait_max_ms"] = r.m.wait_max_ms;
  j["max_holders"] = r.m.max_holders;
  j["fence_inversions"] = r.m.fence_inversions;
  j["pending_at_stop"] = r.m.pending_at_stop;
}

// The server's side, the overtakes' classification and the workers' counters.
void run_costs_json(Json& j, const Measured& r) {
  j["redis_commands"] = r.d.commands;
  j["redis_top_level_commands"] = r.d.top_level;
  j["redis_cpu_us"] = r.d.cpu_us;
  j["commands_per_grant"] = r.cmds_pg;
  j["redis_cpu_us_per_grant"] = r.cpu_pg;
  j["round_trips_per_grant"] = r.rt_pg;
  j["command_us_per_grant"] = r.cmd_us_pg;
  j["redis_cpu_us_per_ping"] = r.cpu_per_ping_us;
  j["overtake_margin_max_ms"] = r.m.overtake_margin_max_ms;
  if (r.spec.system == "fair") {
    j["overtakes_overtaken_reached_redis_later"] = r.m.overtakes_later_arrival;
    j["overtakes_fifo_violations"] = r.m.overtakes_fifo_violation;
    j["overtakes_unclassified"] = r.m.overtakes_unclassified;
    j["arrival_delay_p50_ms"] = r.m.arrival_delay_p50_ms;
    j["arrival_delay_p99_ms"] = r.m.arrival_delay_p99_ms;
    j["arrival_delay_max_ms"] = r.m.arrival_delay_max_ms;
  }
  j["client_round_trips"] = r.tot.rt;
  j["heartbeats"] = r.tot.heartbeats;
  j["wakes_signal"] = r.tot.wakes_signal;
  j["wakes_keyspace"] = r.tot.wakes_keyspace;
  j["wakes_timer"] = r.tot.wakes_timer;
  j["wakes_heartbeat"] = r.tot.wakes_heartbeat;
  j["worker_errors"] = r.tot.errors;
}

}  // namespace

Summary summarise(const std::vector<Measured>& runs) {
  Summary s;
  Samples x;
  for (const auto& r : runs) {
    if (!r.ok || r.m.grants == 0) continue;
    ++s.runs;
    add_latencies(x, s, r);
    add_counts(x, s, r);
  }
  take_medians(x, s);
  take_shares(x, s);
  return s;
}

Json summary_json(const Summary& s) {
  Json j = Json::object();
  j["rounds"] = s.runs;
  j["round_ping_us"] = s.round_ping_us;
  j["rtt_ref_us"] = s.rtt_ref_us;
  j["grants"] = s.grants;
  j["grants_per_s"] = s.grants_per_s;
  j["other_participant_grants_per_s"] = s.cross_per_s;
  j["handoff_p50_us"] = s.p50_us;
  j["handoff_p99_us"] = s.p99_us;
  j["handoff_p50_rtt"] = s.p50_rtt;
  j["handoff_p99_rtt"] = s.p99_rtt;
  j["overtakes"] = s.overtakes;
  j["overtakes_per_100"] = s.overtakes_per_100;
  j["overtakes_strict"] = s.strict_overtakes;
  j["overtakes_strict_per_100"] = s.strict_per_100;
  j["self_regrab_pct"] = s.regrab_pct;
  j["self_regrabs_while_others_wait"] = s.regrabs_waiting;
  j["self_regrab_while_others_wait_pct"] = s.regrab_waiting_pct;
  j["fence_inversions"] = s.inversions;
  j["wait_p99_ms"] = s.wait_p99_ms;
  j["wait_max_ms"] = s.wait_max_ms;
  j["max_holders"] = s.max_holders;
  j["commands_per_grant"] = s.cmds_pg;
  j["redis_cpu_us_per_grant"] = s.cpu_pg;
  j["round_trips_per_grant"] = s.rt_pg;
  j["command_us_per_grant"] = s.cmd_us_pg;
  j["overtake_margin_max_ms"] = s.margin_max_ms;
  j["overtakes_overtaken_reached_redis_later"] = s.later_arrival;
  j["overtakes_fifo_violations"] = s.fifo_violations;
  j["overtakes_unclassified"] = s.unclassified;
  j["arrival_delay_p99_ms"] = s.arrival_p99_ms;
  j["arrival_delay_max_ms"] = s.arrival_max_ms;
  j["wakes_signal_per_grant"] = s.wakes_signal_pg;
  j["wakes_keyspace_per_grant"] = s.wakes_keyspace_pg;
  j["wakes_timer_per_grant"] = s.wakes_timer_pg;
  j["wakes_heartbeat_per_grant"] = s.wakes_heartbeat_pg;
  return j;
}

Json metrics_json(const Measured& r, bool with_commands) {
  Json j = Json::object();
  run_figures_json(j, r);
  run_costs_json(j, r);
  if (r.spec.observe) {
    j["observed_handoff_grants"] = r.observed_grants;
    j["observed_out_of_ticket_order"] = r.observed_inversions;
  }
  if (with_commands) {
    Json c = Json::object();
    for (const auto& [k, v] : r.d.per_command) c[k] = v;
    j["commands"] = c;
  }
  return j;
}

void push_runs(Json& array, const std::vector<Measured>& runs) {
  for (std::size_t i = 0; i < runs.size(); ++i) array.push(metrics_json(runs[i], i == 0));
}

Layout layout(int W) {
  if (W <= 16) return {W, 1};      // one process per participant
  if (W <= 64) return {4, W / 4};  // threads inside a few processes
  return {8, W / 8};
}

}  // namespace fbench
