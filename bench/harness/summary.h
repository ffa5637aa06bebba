#pragma once
// The contended runs' figures as JSON, and their medians (or pooled counts)
// over the rounds of one configuration.
#include <cmath>
#include <vector>

#include "common.h"
#include "harness.h"

namespace fbench {

struct Summary {
  int runs = 0;
  double round_ping_us = NAN, rtt_ref_us = NAN, grants_per_s = NAN, cross_per_s = NAN, p50_us = NAN, p99_us = NAN,
         p50_rtt = NAN, p99_rtt = NAN, wait_p99_ms = NAN, wait_max_ms = 0, cmds_pg = NAN, cpu_pg = NAN, rt_pg = NAN;
  long long grants = 0, overtakes = 0, strict_overtakes = 0, regrabs = 0, regrabs_waiting = 0, inversions = 0;
  double overtakes_per_100 = 0, strict_per_100 = 0, regrab_pct = 0, regrab_waiting_pct = 0;
  int max_holders = 0;
  double cmd_us_pg = NAN, margin_max_ms = 0, arrival_p99_ms = NAN, arrival_max_ms = 0;
  long long later_arrival = 0, fifo_violations = 0, unclassified = 0;
  double wakes_signal_pg = NAN, wakes_keyspace_pg = NAN, wakes_timer_pg = NAN, wakes_heartbeat_pg = NAN;
};

// Over the runs that succeeded and granted something.
Summary summarise(const std::vector<Measured>& runs);
Json summary_json(const Summary& s);
// One run; `with_commands`: with the server's per-command counts.
Json metrics_json(const Measured& r, bool with_commands);
// Appends every run of one configuration to `array`, the first with its
// per-command counts.
void push_runs(Json& array, const std::vector<Measured>& runs);

// How W participants are spread over processes and threads.
struct Layout {
  int procs, threads;
};
Layout layout(int W);

}  // namespace fbench
