#pragma once
// What the session asks of a registered claim (see api/claim_core.h): its
// heartbeat item and the answers to it, wake signals and kicks, shutdown.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "node/sync_wait.h"
#include "protocol/calls.h"

namespace fairlock::detail {

using SteadyTime = std::chrono::steady_clock::time_point;

class SessionMember {
 public:
  struct Beat {
    std::string member;
    std::chrono::milliseconds lease;
    bool holder;  // collected while holding (not while waiting)
    // A renewal that extends what its holder believes only once this many
    // replicas acknowledged it (Options::sync_replicas): the round ends with
    // WAIT, and the results carry the acks.
    SyncWait sync{};
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

}  // namespace fairlock::detail
