#pragma once
// The client-side grant history written by fairlock_fault_worker processes
// (and by in-process test threads through the same Recorder format), and the
// checker run over it.
//
// A grant's *validity interval* is [start, valid_end]:
//   start     = recorder TIME read after lock()/try_lock*() returned, provided
//               owns_lock() was still true afterwards (else the interval is empty);
//   valid_end = the TIME read right before unlock() if owns_lock() was true
//               after it; otherwise the last TIME t after which owns_lock() was
//               still true (the worker samples every ~2 ms while it holds). So
//               a holder that was SIGKILLed, SIGSTOPped, or lost its lease
//               counts as valid exactly as long as it believed itself valid.
// Both ends are taken inside the real interval, so an overlap of two
// intervals is an overlap of two grants the clients believed valid.
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "server_log.h"
#include "support.h"

namespace fairlock::faults {

struct GrantRec {
  std::string gid, wid, name, op, unlock_result;
  std::uint32_t permits = 1;
  std::uint64_t fence = 0;
  Micros t_call = 0, start = 0, end = -1, unlock_t = -1, lost_cb = -1, last_valid = -1;
  long lease_ms = 0;
  bool owned_start = false, owned_end = false;
  // Derived by check():
  Micros valid_end = -1;  // -1: empty interval
  int epoch = 0;
  bool ambiguous = false;  // granted across a data loss: epoch unknown
  bool linked = false;     // matched to the server's own grant
};

struct ReturnRec {  // a call that returned without a grant
  std::string wid, op, name, outcome, msg;
  std::uint32_t permits = 1;
  Micros t_call = 0, t_ret = 0;
  long timeout_ms = -1;
};

struct WorkerRec {
  std::string wid, cid;
  long pid = 0;
  Micros t_start = 0, t_done = -1;
  // grants waits timeouts cancels lost reconnects script_reloads wakes_signal
  // wakes_timer wakes_heartbeat wakes_keyspace heartbeats
  std::vector<std::uint64_t> stats;
  std::uint64_t stat(const char* which) const;
};

struct History {
  std::vector<GrantRec> grants;
  std::vector<ReturnRec> returns;
  std::map<std::string, WorkerRec> workers;
  std::vector<std::string> unexpected;  // X records
  static History load(Rec& rec, const std::string& ev);
  std::uint64_t total(const char* stat) const;  // summed over workers that finished
};

struct CheckConfig {
  const ServerLog* log = nullptr;      // links grants to the server's; its losses define epochs
  std::set<std::string> killed;        // wids that were SIGKILLed (no D record expected)
  Micros deadline_slack_us = 8000000;  // try_lock_for may return this late at most
  // Outcomes allowed for calls that returned without a grant.
  std::set<std::string> allowed_outcomes = {"timeout", "busy", "cancelled"};
  std::set<std::string> allowed_unlock = {"ok"};
};

struct CheckResult {
  std::vector<std::string> violations;
  std::size_t grants = 0, valid = 0, linked = 0, ambiguous = 0, timed_calls = 0, returns = 0;
  std::size_t max_concurrent = 0;               // most holders of one name seen at once
  double max_overshoot_ms = 0;                  // worst try_lock_for return after its deadline
  std::map<std::string, std::size_t> outcomes;  // counts of non-grant outcomes and unlock results
  std::string summary() const;
};

CheckResult check(History& h, const CheckConfig& cfg);

}  // namespace fairlock::faults
