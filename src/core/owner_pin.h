#pragma once
// The session's owner (the client), pinned while a thread of the session
// works for it: the heartbeat holds a reference for each round, the wake
// router for each event, so the owner is never destroyed in the middle of
// either.
#include <functional>
#include <memory>
#include <thread>
#include <utility>

namespace fairlock::detail {

class OwnerPin {
 public:
  // `pin` returns a reference that keeps the owner alive, or null once it
  // is going away. Set before any thread of the session starts.
  void set(std::function<std::shared_ptr<void>()> pin) { pin_ = std::move(pin); }

  // The owner, pinned; null once it is going away. A session without an
  // owner (tests) pins nothing.
  std::shared_ptr<void> pin() const {
    static const auto unowned = std::make_shared<int>(0);
    return pin_ ? pin_() : unowned;
  }

  // Drops a pin; the last reference goes on a thread of its own, so the
  // owner is never destroyed on the calling thread inside its loop.
  static void release_elsewhere(std::shared_ptr<void> keep) {
    if (keep.use_count() == 1) std::thread([k = std::move(keep)] {}).detach();
  }

 private:
  std::function<std::shared_ptr<void>()> pin_;
};

}  // namespace fairlock::detail
