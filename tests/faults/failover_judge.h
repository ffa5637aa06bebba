#pragma once
// Judging a run of workers across failovers of their server (a Sentinel
// set's master, a Redis Cluster slot's master, a slot moved): the outcomes
// a failover may cause, the history checker's verdict, and how long the
// queue took to resume after each fault.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "history.h"
#include "scenario.h"

namespace fairlock::faults {

inline CheckConfig failover_check() {
  CheckConfig cfg;
  // A call may meet a failover: refused (the master is down: conn, or a
  // replica missing while the set resettles: notrepl) or cut by its
  // deadline. A release that meets one fails (conn) and the grant runs out
  // with its lease; one whose grant ran out meanwhile says lost.
  cfg.allowed_outcomes = {"timeout", "busy", "cancelled", "conn", "timeouterr", "notrepl"};
  cfg.allowed_unlock = {"ok", "lost", "conn"};
  return cfg;
}

// Waits (bounded) for the workers and runs the checker over their history:
// no two holders overlap, and enough grants to judge by.
inline void judge(Scenario& sc, const std::string& label, std::size_t at_least, std::chrono::seconds limit) {
  sc.wait_all(limit);
  const CheckResult r = sc.check(failover_check(), label);
  EXPECT_EQ(r.overlaps, 0u);
  EXPECT_GT(r.valid, at_least) << "too few grants to judge";
}

// For each time in `faults` (recorder time), the ms to the first grant after
// it: on the new master, once the failover is done.
inline std::vector<long long> first_grant_after(const std::vector<Micros>& faults, const History& h) {
  std::vector<long long> out;
  for (const Micros k : faults) {
    Micros first = -1;
    for (const GrantRec& g : h.grants) {
      if (g.start > k && (first < 0 || g.start < first)) first = g.start;
    }
    if (first >= 0) out.push_back((first - k) / 1000);
  }
  return out;
}

// For each time in `faults`, the ms until every name of the history was
// granted again (the slowest name's first grant after it): a name whose
// release was lost with the master resumes later than the others, which
// first_grant_after does not show. A fault after which some name was never
// granted again gives none.
inline std::vector<long long> every_name_granted_after(const std::vector<Micros>& faults, const History& h) {
  std::map<std::string, std::vector<GrantRec>> by_name;
  for (const GrantRec& g : h.grants) by_name[g.name].push_back(g);
  std::vector<long long> out;
  for (const Micros k : faults) {
    long long slowest = 0;
    for (const auto& [name, grants] : by_name) {
      History one;
      one.grants = grants;
      const std::vector<long long> first = first_grant_after({k}, one);
      if (first.empty()) {
        slowest = -1;
        break;
      }
      slowest = std::max(slowest, first[0]);
    }
    if (slowest >= 0) out.push_back(slowest);
  }
  return out;
}

}  // namespace fairlock::faults
