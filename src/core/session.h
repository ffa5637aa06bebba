#pragma once
// The process's session: the registry of its live claims and the batched
// heartbeat that keeps them alive (one pipelined round trip per server per
// interval, whatever the number of claims). It is also where wake signals
// land: it routes each one to the claim it names.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/counters.h"
#include "base/owned_thread.h"
#include "node/wake.h"
#include "protocol/calls.h"

namespace spdlog {
class logger;
}

namespace fairlock::detail {

class Router;
class Server;
using SteadyTime = std::chrono::steady_clock::time_point;

// When the heartbeat round after one that ran from `started` to `ended`
// starts: a period from its start, not its end (a round that takes long, for
// thousands of waiters or a loaded server, must not stretch the time between
// two renewals of one entry towards its liveness); and a quarter period
// after its end (heartbeating without a break would load an already slow
// server more), unless that is more than two periods after its start: a
// pause never takes the last period of a liveness of three.
SteadyTime next_heartbeat_round(SteadyTime started, SteadyTime ended, std::chrono::milliseconds period);

// What the session asks of a registered claim (see Participant).
class SessionMember {
 public:
  struct Beat {
    std::string member;
    std::chrono::milliseconds lease;
    bool holder;  // collected while holding (not while waiting)
  };
  virtual ~SessionMember() = default;
  virtual const Keys& keys() const noexcept = 0;
  virtual const std::string& name() const noexcept = 0;
  virtual std::uint32_t permits() const noexcept = 0;
  // What the next heartbeat should send for it, if anything.
  virtual std::optional<Beat> beat_item(SteadyTime now) = 0;
  virtual void on_beat(const Beat& beat, BeatResult result, SteadyTime sent_at) = 0;
  virtual void on_beat_error(const Beat& beat, const std::string& error) = 0;
  // `member` was granted with `fence`; true if that woke a wait.
  virtual bool on_signal(const std::string& member, std::uint64_t fence) = 0;
  // Ask Redis again now; true if a wait was woken.
  virtual bool kick() = 0;
  // The ticket of a wait in progress (keyspace wakes go to the earliest).
  virtual std::optional<std::uint64_t> waiting_ticket() const = 0;
  // Client shutdown: a wait is cancelled; a held grant's member is returned
  // for release.
  virtual std::optional<std::string> on_shutdown() = 0;
};

class Session final : public WakeSink {
 public:
  // The most claims of one name in one heartbeat call. A name with more is
  // beaten in several calls of the same round trip, so that no one script
  // holds Redis, or the reply, for long: one call for 10,000 waiters took
  // 106 ms of Redis time when idle, and over command_timeout (2 s) under load.
  static constexpr std::size_t kBeatCallSize = 256;

  Session(std::chrono::milliseconds liveness, Counters& counters, spdlog::logger& log);
  ~Session() override;
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // `pin` returns a reference that keeps the session's owner (the client)
  // alive, or null once it is going away: the heartbeat thread holds one
  // for each round, and wake events for their handling, so the owner is
  // never destroyed in the middle of either. Set before any thread starts.
  void set_owner(std::function<std::shared_ptr<void>()> pin);
  void start(Router& router);
  // Cancels every wait, releases every held grant (one round trip per
  // server), stops the heartbeat.
  void shutdown() noexcept;

  void enlist(const std::string& member, const std::shared_ptr<SessionMember>& m, std::chrono::milliseconds lease);
  void delist(const std::string& member);
  // A third of the shortest lease (or liveness) in use now, at least 10 ms.
  std::chrono::milliseconds heartbeat_period() const;

  void granted(const std::string& member, std::uint64_t fence) override;
  void recheck(const std::string* name) override;

 private:
  struct Entry {
    std::weak_ptr<SessionMember> member;
    long long lease_ms;
  };
  struct Group {  // the claims of one name on one server
    std::vector<std::pair<std::shared_ptr<SessionMember>, SessionMember::Beat>> items;
  };
  std::vector<std::shared_ptr<SessionMember>> members();
  void kick_waiters(const std::string* name);
  std::shared_ptr<void> pinned() const;
  static void release_elsewhere(std::shared_ptr<void> keep);
  void erase(std::map<std::string, Entry>::iterator it);
  void loop(const std::shared_ptr<std::atomic<bool>>& stopped);
  std::shared_ptr<void> wait_for_round(SteadyTime& next);
  SteadyTime next_round(SteadyTime started, SteadyTime ended);  // logs an overrun
  void beat();
  void beat_server(Server& server, std::map<std::string, Group>& groups);
  void release_held();

  const std::chrono::milliseconds liveness_;
  Counters& counters_;
  spdlog::logger& log_;
  Router* router_ = nullptr;

  mutable std::mutex reg_mu_;
  std::map<std::string, Entry> registry_;  // member -> claim
  std::multiset<long long> leases_;        // of the registered claims

  std::mutex hb_mu_;
  std::condition_variable hb_cv_;
  bool stopping_ = false;
  bool poke_ = false;
  // Overrunning rounds are logged at most once per kOverrunWarningEvery
  // (touched by the heartbeat thread only).
  static constexpr std::chrono::seconds kOverrunWarningEvery{30};
  std::optional<SteadyTime> last_overrun_warning_;
  std::function<std::shared_ptr<void>()> pin_;
  // Set with stopping_; shared with the thread, which reads it after a round
  // whose end may have destroyed this session (see loop).
  const std::shared_ptr<std::atomic<bool>> stopped_ = std::make_shared<std::atomic<bool>>(false);
  OwnedThread thread_;
};

}  // namespace fairlock::detail
