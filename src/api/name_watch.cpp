// NameWatch: a wait's subscription to its name's wake channel, on the Wake
// of the node that owns the name now.
#include "api/name_watch.h"

#include "node/wake.h"

namespace fairlock::detail {

bool NameWatch::start(Wake& wake, const std::string& name, bool wait, const std::atomic<bool>* give_up) {
  stop(name);
  wake_ = &wake;
  return wake.watch(name, wait, give_up);
}

void NameWatch::follow(Wake& wake, const std::string& name) {
  if (wake_ == nullptr || wake_ == &wake) return;
  // Left behind on the old node, the subscription would never signal again
  // (redis #12558: perhaps without a word): subscribe where the name is now.
  wake_->unwatch(name);
  wake_ = &wake;
  wake.watch(name, false);
}

bool NameWatch::confirmed(Wake& wake, const std::string& name) const { return wake_ == &wake && wake.watching(name); }

void NameWatch::stop(const std::string& name) noexcept {
  if (wake_ == nullptr) return;
  wake_->unwatch(name);
  wake_ = nullptr;
}

}  // namespace fairlock::detail
