#pragma once
// Whether a server may evict the lock's keys. Every key of a name carries an
// expiry, so any maxmemory-policy but noeviction (volatile-* as much as
// allkeys-*) may evict a grant before its deadline once memory reaches
// maxmemory; the next caller is then granted too. Checked on each connection
// the client opens (Server's pools): at start-up and on every reconnect,
// which is how a restarted or replaced server is met.
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "net/connection.h"

namespace spdlog {
class logger;
}

namespace fairlock::detail {

// A server's eviction settings.
struct MemoryPolicy {
  std::string policy;            // maxmemory-policy
  unsigned long long maxmemory;  // bytes; 0: no limit
};

// From INFO memory's text, or from CONFIG GET maxmemory*'s reply (name,
// value pairs); nullopt when either field is missing.
std::optional<MemoryPolicy> policy_from_info(std::string_view info);
std::optional<MemoryPolicy> policy_from_config(const redisReply& r);

class EvictionCheck {
 public:
  // `allow`: Options::allow_evicting_server.
  EvictionCheck(std::string where, bool allow, spdlog::logger& log);
  // Reads the settings over `c` (INFO memory: one round trip; CONFIG GET
  // too where INFO is refused) and throws EvictionPolicyError for a policy
  // that evicts with maxmemory set, unless allowed. What it logs (allowed
  // anyway, no maxmemory yet, could not read) it logs once per server until
  // the finding changes.
  void check(Connection& c);

 private:
  static std::optional<MemoryPolicy> read(Connection& c, std::string& why_not);
  void note(bool error, const std::string& message);

  const std::string where_;
  const bool allow_;
  spdlog::logger& log_;
  std::mutex mu_;
  std::string noted_;  // the last message logged (guarded by mu_)
};

}  // namespace fairlock::detail
