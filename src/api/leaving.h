#pragma once
// Leaving the queue and giving a grant back, for every driver: at the
// deadline (give_up), after an error or a cancel (fail_wait, leave_within),
// in the background once the wait has ended (leave_later), and release,
// with its retry when it fails in a way that may pass (api/release_retry.h)
// and its note for a master change (api/recent_releases.h).
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "api/claim_core.h"
#include "fairlock/fair_semaphore.h"

namespace fairlock::detail {

class Leaving : public ClaimCore {
 public:
  Released release() noexcept;
  void unlock() noexcept;  // release(), with a warning if nothing was held
  void cancel() noexcept;

 protected:
  using ClaimCore::ClaimCore;

  void give_up(std::unique_lock<std::mutex>& lk, const std::string& member);
  void fail_wait(std::unique_lock<std::mutex>& lk, const std::string& member, bool call_server = true) noexcept;
  void leave_within(const std::string& member, SteadyTime until) noexcept;
  void leave_later(const std::string& member) noexcept;
  // `on_failure`, if given, takes over when the calls fail (instead of a warning).
  void settle_leave(const std::string& member, const std::function<CancelResult()>& left,
                    const std::function<void()>& on_failure = {}) noexcept;
  // (leaving_release.cpp)
  void release_quietly(const std::string& member, bool queued_first) noexcept;
  void note_released(const std::string& member, bool queued_first) noexcept;

 private:
  void left_later(const std::string& member, const redisReply* reply, const std::exception_ptr& error) noexcept;
  void log_abandoned(const std::string& why) noexcept;
  Released release_member(const ReleasePlan& plan) noexcept;
  void release_later(const std::string& member, bool queued_first, const std::exception& error) noexcept;
};

}  // namespace fairlock::detail
