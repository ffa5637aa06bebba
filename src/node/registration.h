#pragma once
// This client's description on one server (docs/PROTOCOL.md "Who: client
// descriptions"): written with the server's first connection, refreshed
// once per third of its expiry by a SET that rides in the pipeline of a
// heartbeat round or of any script call (a round trip of its own only on a
// cluster's master that holds none of the client's claims:
// Server::keep_registered; a client idle past the expiry is named again
// from its next call there, or its next heartbeat round), and deleted at
// shutdown.
// Best effort throughout: a failed write waits for the next round, and no
// caller ever sees its errors.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "net/connection.h"

namespace fairlock::detail {

class Registration {
 public:
  using Time = std::chrono::steady_clock::time_point;
  // An empty key: no registration (nothing is ever sent).
  Registration(std::string key, std::string value, std::chrono::milliseconds expiry);

  // A SET is due at `now`: the key was never written, or a third of its
  // expiry has passed since (no side effect: a check for every call).
  bool is_due(Time now) const;
  // The SET to send with a round trip starting at `now`, if one is due.
  // The caller sends it (a SET sent may have run even without a reply).
  std::optional<Argv> due(Time now);
  // The reply to the SET sent at `sent_at`.
  void written(const redisReply& reply, Time sent_at);
  // Writes it now, on `c` (the server's first connection).
  void write(Connection& c);
  // The DEL to send at shutdown: once, and only if a write was ever tried;
  // no SET is due afterwards.
  std::optional<Argv> removal();

 private:
  const std::string key_;
  const std::string value_;
  const std::string expiry_ms_;
  const std::chrono::milliseconds refresh_every_;
  std::atomic<std::int64_t> written_at_ns_{-1};  // steady clock; -1: never written
  std::atomic<bool> tried_{false};
  std::atomic<bool> removed_{false};
};

}  // namespace fairlock::detail
