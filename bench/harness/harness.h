#pragma once
// Contended runs: W participants in worker processes (`fairlock_bench
// worker`, bench/harness/worker.cpp) on one lock or semaphore, started together,
// stopped together, measured from their grant records and the server's INFO.
// Worker processes run under the repository's child-process helper
// (tests/harness/kit/child_process.h).
#include <cmath>
#include <string>
#include <vector>

#include "analysis.h"
#include "common.h"
#include "env.h"
#include "worker.h"

namespace fbench {

struct RunSpec {
  std::string system = "fair";  // fair | unfair | zset
  int procs = 1, threads = 1, permits = 1;
  std::string notify = "publish";
  int duration_ms = 3000;
  int hold_us = 0;
  int liveness_ms = 5000;
  bool tls = false;      // the workers connect to the TLS port
  bool observe = false;  // subscribe to the workers' wake channels: the server's grant order
  int W() const { return procs * threads; }
};

struct Measured {
  RunSpec spec;
  bool ok = false;
  Metrics m;
  ServerDelta d;
  WorkerTotals tot;
  double round_ping_us = NAN;  // raw data: median PING right before and after the run (no unit: it is
                               // bimodal on VMs, same-vCPU or cross-vCPU by blocks)
  double rtt_ref_us = NAN;     // the run's RTT reference (Env::rtt), the unit of the "× RTT" figures
  double cmds_pg = NAN, cpu_pg = NAN, rt_pg = NAN;
  double cmd_us_pg = NAN;        // Redis's own command time per grant (client_command_usec)
  double cpu_per_ping_us = NAN;  // Redis CPU per PING around the run (raw data; an idle server's PING cost
                                 // swings with VM wake-up costs, so it is no unit for CPU per grant)
  std::vector<std::string> modes;
  long long observed_grants = 0;      // handoff grants seen on the wake channels, in server order
  long long observed_inversions = 0;  // ... with a fence below an earlier one (out of ticket order)
};

// SIGINT, SIGTERM and SIGHUP kill every worker and exit 128+sig; SIGPIPE is
// ignored. Workers also die with the driver (PR_SET_PDEATHSIG) and by their
// own alarm().
void install_signal_handlers();
// Kills every worker still running and exits with `code` at once.
[[noreturn]] void kill_workers_and_exit(int code);

// One run of `s`, with PINGs right before and after it (raw data).
Measured measure(Env& e, const RunSpec& s);

}  // namespace fbench
