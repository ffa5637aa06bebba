#pragma once
// Runs the scripts' calls on one server, pipelined: as functions of
// fairlock's library (FCALL; the library is loaded once by FUNCTION LOAD),
// or by EVALSHA where the server has no functions, the user may not use
// them, or the client was told not to. The same Lua text runs either way
// (docs/PROTOCOL.md §4); the way is chosen per server and only ever falls
// back from functions to EVALSHA.
#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "net/connection.h"
#include "protocol/scripts.h"

namespace fairlock::detail {

// The library or script cache kept being flushed for a whole budget: the
// calls that found their script missing did not run, so they may be
// retried at will.
class ScriptsFlushed : public ConnectionError {
 public:
  using ConnectionError::ConnectionError;
};

// What an error reply to a script call means (Redis 7.0's texts): the
// script was missing (the call did not run: load it and call again), FCALL
// itself is refused (no functions: the call did not run either), or
// anything else (the call's own outcome).
enum class CallError { other, missing, no_functions };
CallError classify_call_error(std::string_view error, ScriptWay sent);
// The same for FUNCTION LOAD: a peer loaded the library first (fine), the
// server or user has no functions, or anything else (e.g. over maxmemory).
enum class LoadError { other, loaded_by_peer, no_functions };
LoadError classify_load_error(std::string_view error);

class ScriptRunner {
 public:
  // `on_reload` is told of each reload of the library or the scripts;
  // `on_fallback`, once, why this server gets EVALSHA instead of functions.
  ScriptRunner(ScriptWay way, std::function<void()> on_reload, std::function<void(const std::string&)> on_fallback);

  // Runs the calls in one round trip. Calls whose script the server lacks
  // (restart, FUNCTION or SCRIPT FLUSH, failover) did not run: it loads the
  // library or scripts and re-runs only those, again after a short backoff
  // while the server keeps losing them, for at most `budget`; then throws
  // ScriptsFlushed. Other error replies are left in place for the caller.
  // Plain commands in `tail` go in the same first pipeline, after the
  // calls; their replies follow the calls'. If calls had to be run again,
  // the tail is sent again after them: it always follows every call that
  // ran (a WAIT in it counts their writes). Until a call of this runner
  // has run, the tail goes after the calls in a round trip of its own: the
  // first calls on a server usually load the scripts, and a WAIT sent
  // before their re-run would wait its whole timeout in vain.
  std::vector<ReplyPtr> run(Connection& c, const std::vector<ScriptCall>& calls, std::chrono::milliseconds budget,
                            const std::vector<Argv>& tail = {});
  ScriptWay way() const { return way_.load(); }

 private:
  // One run's calls, their replies so far, the way each was last sent, and
  // the way this run sends them now.
  struct Batch {
    const std::vector<ScriptCall>& calls;
    std::vector<ReplyPtr> replies;
    std::vector<ScriptWay> sent;
    ScriptWay way;
  };
  void load_and_run(Connection& c, Batch& b, const std::vector<std::size_t>& which);
  std::vector<std::size_t> not_run(Batch& b);
  void fall_back(const std::string& why);

  std::atomic<ScriptWay> way_;
  // A call of this runner came back run (the library or scripts were there):
  // until then a tail goes in a round trip of its own (see run).
  std::atomic<bool> seen_loaded_{false};
  std::function<void()> on_reload_;
  std::function<void(const std::string&)> on_fallback_;
};

}  // namespace fairlock::detail
