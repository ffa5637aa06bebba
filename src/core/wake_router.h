#pragma once
// Where the wake subscribers' events land (WakeSink): a grant published
// for a member goes to the claim registered as it; a keyspace event for a
// name kicks the earliest waiter there (all waiters, when the subscriber
// lost its connection and waiters must poll).
#include <cstdint>
#include <memory>
#include <string>

#include "base/counters.h"
#include "core/owner_pin.h"
#include "core/registry.h"
#include "node/wake.h"

namespace fairlock::detail {

class WakeRouter final : public WakeSink {
 public:
  WakeRouter(Registry& registry, const OwnerPin& owner, Counters& counters)
      : registry_(registry), owner_(owner), counters_(counters) {}

  void granted(const std::string& member, std::uint64_t fence) override;
  void recheck(const std::string* name) override;

 private:
  void kick_waiters(const std::string* name);

  Registry& registry_;
  const OwnerPin& owner_;
  Counters& counters_;
};

}  // namespace fairlock::detail
