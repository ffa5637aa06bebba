#pragma once
// The client-side grant history written by fairlock_fault_worker processes
// (and by in-process test threads through the same Recorder format), and the
// checker run over it.
//
// A grant's *validity interval* is [start, valid_end], in recorder TIME:
//   start     = recorder TIME read after lock()/try_lock*() returned, provided
//               owns_lock() was still true afterwards (else the interval is empty);
//   valid_end = the TIME read right before unlock() if owns_lock() was true
//               after it; otherwise the last TIME t after which owns_lock() was
//               still true (the worker samples every ~2 ms while it holds). So
//               a holder that was SIGKILLed, SIGSTOPped, or lost its lease
//               counts as valid exactly as long as it believed itself valid.
// Its *belief interval* [b_start, b_end] is the same on CLOCK_MONOTONIC (one
// clock for all processes of the host, never stepped), from the user's point
// of view: b_start is when the user learned the grant (read after lock() or
// try_lock_for() returned, or first thing in the async callback), b_end the
// last time it was still believed (owns_lock() true and the same fence). The
// worker reads every time *before* the owns_lock() that confirms it, so both
// ends lie inside the real belief and a correct library can never show an
// overlap, not even across a SIGSTOP of the holder. Histories without
// monotonic times (hand-made ones) use the validity interval as the belief.
//
// The checker's rules over beliefs (see check() and belief.cpp):
//   - mutual exclusion: at no instant more beliefs in one name (and data
//     epoch: a FLUSHALL or a restart without data explains an overlap) than
//     permits. An overlap is *explained* only when the test SIGSTOPped the
//     earlier holder's process at some time inside its belief and before the
//     later belief began (a frozen process cannot look at its clock: what
//     fences are for); explained overlaps are counted apart, not failed, and
//     a correct library shows none (see above);
//   - fences: never granted twice, and a lock's beliefs begin in fence order;
//   - a wait that reported no grant leaves owns_lock() false (the worker
//     records a grant of op "phantom:<op>" when it does not, and holds it
//     while owns_lock() says so: it takes part in the rules above too);
//   - every loss is reported: a lock grant taken over before its holder
//     began to release it (another grant of a higher fence, by the server's
//     log or by a client's return, at a TIME before the holder's `end`) must
//     show on_lost or Released::lost (a release that failed in transit
//     cannot know: counted as loss-unknowable);
//   - every accepted async wait is called back exactly once (C records per
//     wait id), by its deadline plus slack; no callback for a refused wait.
#include <cstdint>
#include <functional>
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
  // CLOCK_MONOTONIC (-1: not recorded): learned, end of hold, last sample.
  Micros m_start = -1, m_end = -1, m_last = -1;
  bool m_owned = false;  // believed at m_start
  bool shared = false;   // through an object shared by the threads of its process
  // Derived by check():
  Micros valid_end = -1;            // -1: empty interval
  Micros b_start = -1, b_end = -1;  // the belief interval; b_end -1: empty
  int epoch = 0;
  bool ambiguous = false;  // granted across a data loss: epoch unknown
  bool linked = false;     // matched to the server's own grant
};

struct ReturnRec {  // a call that returned without a grant
  std::string wid, op, name, outcome, msg;
  std::uint32_t permits = 1;
  Micros t_call = 0, t_ret = 0;
  long timeout_ms = -1;
  Micros m_call = -1, m_ret = -1;  // CLOCK_MONOTONIC around the call itself (-1: not recorded)
};

struct PauseRec {  // the test SIGSTOPped wid in [from, to] (CLOCK_MONOTONIC; to -1: never resumed)
  std::string wid;
  Micros from = 0, to = -1;
};

struct WaitRec {  // an async wait (A record) and the runs of its callback (C records)
  std::string id, wid, name, op;
  Micros m_call = -1;  // -1: no A record (lock_async threw, or the process died first)
  long timeout_ms = -1;
  std::vector<std::pair<std::string, Micros>> calls;  // outcome, CLOCK_MONOTONIC
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
  std::vector<PauseRec> pauses;
  std::map<std::string, WaitRec> waits;  // by wait id
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
  // A server grant must precede a holder's `end` by this much to count as a
  // takeover (MONITOR stamps and TIME are both gettimeofday on one host).
  Micros takeover_margin_us = 1000;
};

struct Overshoot {  // a timed wait that returned more than 300 ms past its deadline
  std::string wid, op, name, outcome, msg;
  long timeout_ms = 0;
  double over_ms = 0;
  Micros m_call = 0, m_ret = 0;  // CLOCK_MONOTONIC (try_lock_for: from recorder TIME)
  Micros paused_us = 0;          // of [m_call, m_ret], the caller's process SIGSTOPped
  double rec_over_ms = 0;        // try_lock_for: by recorder TIME read around it (its round trips included)
};

struct CheckResult {
  std::vector<std::string> violations;
  std::size_t grants = 0, valid = 0, linked = 0, ambiguous = 0, timed_calls = 0, returns = 0;
  std::size_t max_concurrent = 0;                       // most holders of one name seen at once
  double max_overshoot_ms = 0;                          // worst try_lock_for return after its deadline
  std::map<std::string, std::size_t> outcomes;          // counts of non-grant outcomes and unlock results
  std::size_t overlaps = 0;                             // beliefs beyond permits (each a violation)
  std::size_t paused_overlaps = 0;                      // overlaps explained by a test pause (not violations)
  std::size_t taken_over = 0, taken_over_reported = 0;  // lock grants taken over while held; reported lost
  std::size_t waits = 0, callbacks = 0;                 // async waits accepted; callback runs
  double max_callback_overshoot_ms = 0;                 // worst timed async callback after its deadline
  // The same two worsts over waits during which the caller was never paused.
  double max_overshoot_unpaused_ms = 0, max_callback_overshoot_unpaused_ms = 0;
  std::vector<Overshoot> overshoots;  // > 300 ms, both kinds
  std::string summary() const;
};

CheckResult check(History& h, const CheckConfig& cfg);

// How long the test kept `wid` SIGSTOPped within [from, to] (CLOCK_MONOTONIC).
Micros paused_within(const History& h, const std::string& wid, Micros from, Micros to);
// Records a timed wait's overshoot (worst, worst unpaused, > 300 ms listed).
void note_overshoot(const History& h, Overshoot o, double& worst, double& worst_unpaused, CheckResult& res);

// The rules of belief.cpp, run by check() (`bad` records a violation).
using Bad = std::function<void(const std::string&)>;
// Mutual exclusion over belief intervals and fence order, for one name and epoch.
void check_beliefs(const std::string& name, const std::vector<const GrantRec*>& gs, const History& h, CheckResult& res,
                   const Bad& bad);
// Every lock grant taken over while held was reported lost.
void check_takeovers(const History& h, const CheckConfig& cfg, CheckResult& res, const Bad& bad);
// Every accepted async wait called back exactly once, by its deadline.
void check_callbacks(const History& h, const CheckConfig& cfg, CheckResult& res, const Bad& bad);

}  // namespace fairlock::faults
