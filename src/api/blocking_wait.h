#pragma once
// The blocking driver: runs a claim's steps on the caller's thread. Script
// calls are made there, bounded by the claim's deadlines (a cancel cuts one
// short), and the thread parks on a condition variable only while queued.
#include <atomic>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "api/leaving.h"
#include "net/call_deadline.h"

namespace fairlock::detail {

class BlockingWait : public Leaving {
 public:
  // deadline: nullopt waits until granted or cancelled. queue=false never
  // queues (try_lock). Returns true when granted.
  bool acquire(std::optional<SteadyTime> deadline, bool queue);

 protected:
  using Leaving::Leaving;

  void watch_within(NameWatch& watch, std::optional<SteadyTime> deadline);

  std::condition_variable cv_;
  // The blocking wait's call in progress: a cancel cuts it short.
  const std::shared_ptr<MovableDeadline> calls_ = std::make_shared<MovableDeadline>();
  std::atomic<bool> cancel_requested_{false};  // the blocking wait's, for Wake::watch (no lock order with it)

 private:
  void watch_queued(std::unique_lock<std::mutex>& lk, NameWatch& watch, std::optional<SteadyTime> deadline);
  // `watch_deadline`: the wait watches its name (per-name signals) from the
  // first time it would sleep queued, within this deadline.
  bool drive(const std::string& member, NameWatch& watch,
             std::optional<std::optional<SteadyTime>> watch_deadline = std::nullopt);
  void ask(std::unique_lock<std::mutex>& lk, const std::string& member, const Step& step);
  void confirm(std::unique_lock<std::mutex>& lk, const std::string& member, const Step& step);
  template <class Call>
  std::exception_ptr call_unlocked(std::unique_lock<std::mutex>& lk, const Step& step, Call call);
  bool finish_granted(std::unique_lock<std::mutex>& lk);
};

}  // namespace fairlock::detail
