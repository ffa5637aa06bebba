#include "core/wake_router.h"

#include <vector>

namespace fairlock::detail {

// The wake thread's events run with the owner pinned: if the user drops the
// last other reference meanwhile, the owner is destroyed on a thread of its
// own, never on the wake thread inside its loop.
void WakeRouter::granted(const std::string& member, std::uint64_t fence) {
  std::shared_ptr<void> keep = owner_.pin();
  if (!keep) return;
  if (std::shared_ptr<SessionMember> m = registry_.find(member)) m->on_signal(member, fence);
  OwnerPin::release_elsewhere(std::move(keep));
}

void WakeRouter::recheck(const std::string* name) {
  std::shared_ptr<void> keep = owner_.pin();
  if (!keep) return;
  kick_waiters(name);
  OwnerPin::release_elsewhere(std::move(keep));
}

void WakeRouter::kick_waiters(const std::string* name) {
  auto all = registry_.members();
  if (!name) {
    for (auto& m : all) m->kick();
    return;
  }
  // Grants follow ticket order, so the grantee is our earliest waiter there.
  std::shared_ptr<SessionMember> first;
  std::uint64_t best = 0;
  for (auto& m : all) {
    if (m->name() != *name) continue;
    auto t = m->waiting_ticket();
    if (t && (!first || *t < best)) {
      first = m;
      best = *t;
    }
  }
  counters_.add(&Stats::wakes_keyspace);  // before the waiter runs on
  if (first) {
    first->kick();
    return;
  }
  // Nobody eligible (a waiter's first reply is still in flight, or all are
  // already asking): ask every waiter there rather than drop the event.
  for (auto& m : all) {
    if (m->name() == *name) m->kick();
  }
}

}  // namespace fairlock::detail
