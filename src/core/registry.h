#pragma once
// The session's registry: the live claims of the process by member, and
// the leases they use (the heartbeat's period follows the shortest).
// Claims are held weakly: one destroyed without delist() is swept by the
// next members().
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "core/session_member.h"

namespace fairlock::detail {

class Registry {
 public:
  explicit Registry(std::chrono::milliseconds liveness) : liveness_(liveness) {}

  // True if this shortened the heartbeat period (the heartbeat may be due sooner).
  bool enlist(const std::string& member, const std::shared_ptr<SessionMember>& m, std::chrono::milliseconds lease);
  void delist(const std::string& member);
  // A third of the shortest lease (or liveness) in use now, at least 10 ms.
  std::chrono::milliseconds heartbeat_period() const;
  // The claims alive now.
  std::vector<std::shared_ptr<SessionMember>> members();
  // The claim registered as `member`, if it is alive.
  std::shared_ptr<SessionMember> find(const std::string& member) const;
  // A claim of `name` learned `ticket` from a reply (queued, or granted: its fence).
  void learned(const std::string& name, std::uint64_t ticket);
  // Per name, the latest ticket its claims learned, the heartbeat's floor
  // (see Heartbeat::floors): kept while the name has claims, and a liveness
  // after its last (its entries live that long without them).
  std::map<std::string, std::uint64_t> floors();

 private:
  struct Entry {
    std::weak_ptr<SessionMember> member;
    long long lease_ms;
  };
  struct Learned {
    std::uint64_t ticket;
    std::chrono::steady_clock::time_point seen;  // last time the name had claims
  };
  std::chrono::milliseconds period_locked() const;
  void erase(std::map<std::string, Entry>::iterator it);

  const std::chrono::milliseconds liveness_;
  mutable std::mutex mu_;
  std::map<std::string, Entry> entries_;    // member -> claim
  std::multiset<long long> leases_;         // of the registered claims
  std::map<std::string, Learned> learned_;  // name -> the latest ticket its claims learned
};

}  // namespace fairlock::detail
