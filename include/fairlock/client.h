#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "fairlock/options.h"

namespace fairlock {

namespace detail {
class ClientImpl;
}

// What a Client has done since it was created (monotonic counters).
struct Stats {
  std::uint64_t grants = 0;            // grants obtained by this process
  std::uint64_t waits = 0;             // lock attempts that had to queue
  std::uint64_t timeouts = 0;          // waits that ended at their deadline
  std::uint64_t cancels = 0;           // waits cancelled
  std::uint64_t wakes_signal = 0;      // grants learned from a PUBLISH message
  std::uint64_t wakes_keyspace = 0;    // wake-ups by a keyspace event
  std::uint64_t wakes_timer = 0;       // acquire re-runs woken by a timer (polling)
  std::uint64_t wakes_heartbeat = 0;   // grants learned from a heartbeat reply
  std::uint64_t lost = 0;              // grants found lost
  std::uint64_t reconnects = 0;        // connections re-established
  std::uint64_t script_reloads = 0;    // NOSCRIPT recoveries
  std::uint64_t heartbeats = 0;        // heartbeat rounds (one round trip each)
};

// One per process (or per Redis server): owns the connections, the
// subscriber for wake signals and the heartbeat thread. Thread-safe.
// FairLock / FairSemaphore objects keep the client's internals alive; once
// the Client is destroyed (or shut down) their waits are cancelled, their
// grants released, and further calls throw fairlock::Error.
class Client {
 public:
  explicit Client(Options options = Options());
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Cancels every wait, releases every grant, stops the threads. Idempotent.
  void shutdown() noexcept;

  const Options& options() const;
  // This process's random client id (hex), part of every queue member.
  const std::string& id() const;
  // The transport actually in use (keyspace/publish may fall back to poll).
  Notify notify_mode() const;
  Stats stats() const;

  // Internal: used by FairLock and FairSemaphore.
  const std::shared_ptr<detail::ClientImpl>& impl() const { return impl_; }

 private:
  std::shared_ptr<detail::ClientImpl> impl_;
};

}  // namespace fairlock
