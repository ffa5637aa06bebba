#pragma once
// Fairness and latency figures from the per-request records of one run.
#include <cstdint>
#include <vector>

#include "worker.h"

namespace fbench {

struct Metrics {
  double window_s = 0;
  long long grants = 0;  // granted inside the window [go, stop]
  double grants_per_s = 0;
  long long cross = 0;  // grants whose previous holder was another participant (permits = 1)
  double cross_per_s = 0;
  long long handoffs = 0;                         // cross grants whose grantee was already waiting at the release
  double handoff_p50_us = 0, handoff_p99_us = 0;  // release returned -> next acquire returned
  long long overtakes = 0;                        // grants that overtook a request that started waiting earlier
  double overtakes_per_100 = 0;                   // with the jitter tolerance
  double overtakes_strict_per_100 = 0;            // tolerance 0
  long long regrabs = 0;                          // grants to the participant that just released (permits = 1)
  double regrab_pct = 0;
  long long regrabs_waiting = 0;  // ... while another participant had been waiting since before the release
  double regrab_waiting_pct = 0;
  double wait_p50_ms = 0, wait_p99_ms = 0, wait_max_ms = 0;
  int max_holders = 0;             // max overlap of [acquire returned, unlock called] intervals
  long long fence_inversions = 0;  // fairlock, permits = 1: a grant with a lower fence than the previous one
  long long pending_at_stop = 0;
  // fairlock only: the ticket (= fence) carries the millisecond at which the
  // request reached Redis, so each overtake can be classified.
  long long overtakes_later_arrival = 0;   // the overtaken request reached Redis after the overtaker: client-side delay
  long long overtakes_fifo_violation = 0;  // it reached Redis first and was still granted later
  long long overtakes_unclassified = 0;    // it was never granted (cancelled at stop): no ticket known
  double overtake_margin_max_ms = 0;       // largest start-of-wait lead among the overtakes counted
  double arrival_delay_p50_ms = 0, arrival_delay_p99_ms = 0, arrival_delay_max_ms = 0;  // lock() called -> at Redis
};

// tol_ns: client-side timestamp jitter allowance (see bench/README.md).
// order_by_fence: take the grant order from the fences (the server's ticket
// order) instead of the lock() return times. Used for semaphores, whose
// concurrent grants return in any order; valid only once the server-side
// grant order has been checked to follow the fences (see the driver's
// observer, which counts inversions in the published grant stream).
Metrics analyse(const std::vector<Rec>& recs, std::int64_t go, std::int64_t stop, int permits, std::int64_t tol_ns,
                bool has_fences, bool order_by_fence = false);

}  // namespace fbench
