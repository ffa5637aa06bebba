#pragma once
// The session's heartbeat: a thread that, once per period, collects what
// every registered claim wants sent (beat_item) and sends it batched, one
// pipelined round trip per server whatever the number of claims, then
// hands each claim its answer (on_beat, on_beat_error).
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/counters.h"
#include "base/owned_thread.h"
#include "core/owner_pin.h"
#include "core/registry.h"

namespace spdlog {
class logger;
}

namespace fairlock::detail {

class Router;
class Server;

// When the heartbeat round after one that ran from `started` to `ended`
// starts: a period from its start, not its end (a round that takes long, for
// thousands of waiters or a loaded server, must not stretch the time between
// two renewals of one entry towards its liveness); and a quarter period
// after its end (heartbeating without a break would load an already slow
// server more), unless that is more than two periods after its start: a
// pause never takes the last period of a liveness of three.
SteadyTime next_heartbeat_round(SteadyTime started, SteadyTime ended, std::chrono::milliseconds period);

class Heartbeat {
 public:
  // The most claims of one name in one heartbeat call. A name with more is
  // beaten in several calls of the same round trip, so that no one script
  // holds Redis, or the reply, for long: one call for 10,000 waiters took
  // 106 ms of Redis time when idle, and over command_timeout (2 s) under load.
  static constexpr std::size_t kBeatCallSize = 256;

  Heartbeat(std::chrono::milliseconds liveness, Registry& registry, const OwnerPin& owner, Counters& counters,
            spdlog::logger& log)
      : liveness_(liveness), registry_(registry), owner_(owner), counters_(counters), log_(log) {}
  ~Heartbeat() { stop(); }
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;

  void start(Router& router);
  // The period may have shortened: the next round may be due sooner.
  void poke();
  // A round now (the master changed: every holder and waiter learns where
  // it stands at once, not at the next period).
  void round_now();
  // No round starts after this; true the first time.
  bool halt() noexcept;
  // Halts, then joins the thread (on its own thread, a callback: detached,
  // it ends by itself).
  void stop() noexcept;

 private:
  struct Group {  // the claims of one name on one server
    std::vector<std::pair<std::shared_ptr<SessionMember>, SessionMember::Beat>> items;
    std::uint64_t floor = 0;  // the latest ticket its claims learned before they were read (0: none)
  };
  void loop(const std::shared_ptr<std::atomic<bool>>& stopped);
  std::shared_ptr<void> wait_for_round(SteadyTime& next);
  SteadyTime next_round(SteadyTime started, SteadyTime ended);  // logs an overrun
  void beat();
  std::map<std::string, std::uint64_t> floors();
  void beat_servers(std::map<Server*, std::map<std::string, Group>>& by_server);
  // False if the round trip failed; `bounded`: within a period (and a WAIT).
  bool beat_server(Server& server, std::map<std::string, Group>& groups, bool bounded);
  void keep_registered_elsewhere(const std::map<Server*, std::map<std::string, Group>>& by_server);

  const std::chrono::milliseconds liveness_;
  Registry& registry_;
  const OwnerPin& owner_;
  Counters& counters_;
  spdlog::logger& log_;
  // Servers whose last round trip failed (heartbeat thread only): beaten last.
  std::set<const Server*> failing_;
  Router* router_ = nullptr;

  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  bool poke_ = false;
  bool round_now_ = false;
  // Overrunning rounds are logged at most once per kOverrunWarningEvery
  // (touched by the heartbeat thread only).
  static constexpr std::chrono::seconds kOverrunWarningEvery{30};
  std::optional<SteadyTime> last_overrun_warning_;
  // Set with stopping_; shared with the thread, which reads it after a round
  // whose end may have destroyed this heartbeat (see loop).
  const std::shared_ptr<std::atomic<bool>> stopped_ = std::make_shared<std::atomic<bool>>(false);
  OwnedThread thread_;
};

}  // namespace fairlock::detail
