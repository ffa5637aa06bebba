#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fairlock/options.h"

namespace fairlock {

namespace detail {
class ClientImpl;
}

// What a Client has done since it was created (monotonic counters).
struct Stats {
  std::uint64_t grants = 0;           // grants obtained by this process
  std::uint64_t waits = 0;            // lock attempts that had to queue
  std::uint64_t timeouts = 0;         // waits that ended at their deadline
  std::uint64_t cancels = 0;          // waits cancelled
  std::uint64_t wakes_signal = 0;     // grants learned from a PUBLISH message
  std::uint64_t wakes_keyspace = 0;   // wake-ups by a keyspace event
  std::uint64_t wakes_timer = 0;      // acquire re-runs woken by a timer (polling)
  std::uint64_t wakes_heartbeat = 0;  // grants learned from a heartbeat reply
  std::uint64_t lost = 0;             // grants found lost
  std::uint64_t reconnects = 0;       // connections re-established (a server that drops one at once counts too)
  std::uint64_t script_reloads = 0;   // loads of the scripts or library a server lacked
  std::uint64_t heartbeats = 0;       // heartbeat rounds (one round trip each)
};

// A holder of a name, as Client::inspect reports it.
struct HolderInfo {
  std::string token;  // the queue member ("p<client>:<token>")
  std::uint64_t fence = 0;
  std::chrono::milliseconds held{0};        // since the grant
  std::chrono::milliseconds lease_left{0};  // <= 0: expired, not yet pruned
  // Who holds it: the client id from the member, and what that client
  // registered (Options::description); empty / 0 when it registered nothing
  // or its registration expired.
  std::string client_id;
  std::string host;
  std::int64_t pid = 0;
  std::string description;
};

// A waiter of a name, in queue order.
struct WaiterInfo {
  std::string token;
  std::size_t position = 0;                    // 0 = next in line
  std::uint64_t ticket = 0;                    // becomes its fence if granted
  std::chrono::milliseconds waited{0};         // since it queued
  std::chrono::milliseconds liveness_left{0};  // <= 0: expired, not yet pruned
  // Who waits: as for HolderInfo.
  std::string client_id;
  std::string host;
  std::int64_t pid = 0;
  std::string description;
};

// The state of one name, read atomically; all times from Redis TIME.
struct QueueState {
  std::string name;
  std::uint32_t permits = 0;     // 0 when the name is idle
  std::uint64_t last_fence = 0;  // the counter: the largest ticket issued
  std::size_t holder_count = 0;
  std::size_t waiter_count = 0;  // all waiters; `waiters` lists the first ones
  std::vector<HolderInfo> holders;
  std::vector<WaiterInfo> waiters;
  std::int64_t server_time_ms = 0;
};

// A name that has holders or waiters now (Client::list).
struct NameSummary {
  std::string name;
  std::size_t holders = 0;
  std::size_t waiters = 0;
  std::uint32_t permits = 0;  // 0 if unreadable (a name an older version keeps)
};

enum class Evicted { none, holder, waiter };

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
  // A failed release still being asked again (Released::failed) gets one
  // last attempt, bounded by 600 ms; it is not waited for beyond that.
  // The asynchronous waits leave their queues together, within one
  // command_timeout (and a grace of 100 ms; a release being retried meanwhile
  // may cut them sooner; a stalled server: the entries run out with this
  // process's liveness).
  void shutdown() noexcept;

  const Options& options() const;
  // This process's random client id (hex), part of every queue member.
  const std::string& id() const;
  // The transport actually in use (keyspace/publish may fall back to poll).
  Notify notify_mode() const;
  Stats stats() const;

  // The state of one name in one atomic script call; lists at most
  // `max_waiters` waiters from the head (waiter_count has them all). Each
  // holder's and waiter's host, pid and description come from its client's
  // registration, read in one more pipelined round trip.
  QueueState inspect(const std::string& name, std::size_t max_waiters = 1000);
  // Names with holders or waiters whose name matches a Redis glob pattern
  // (found with SCAN, never KEYS).
  std::vector<NameSummary> list(const std::string& pattern = "*");
  // Operator's tool: removes a holder or waiter by its token (as shown by
  // inspect); the next waiter is granted and woken.
  Evicted evict(const std::string& name, const std::string& token);

 private:
  friend class FairSemaphore;  // builds its claim on impl_ (FairLock is one)
  std::shared_ptr<detail::ClientImpl> impl_;
};

}  // namespace fairlock
