#pragma once
// Ends calls at deadlines set after they began (MovableDeadline::lower): a
// thread of the client's, started the first time it is needed, that only
// waits for the nearest such deadline and cuts the call still blocked past
// it. It never calls a server itself, so a stalled one cannot hold it.
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <queue>
#include <vector>

#include "base/owned_thread.h"
#include "net/call_deadline.h"

namespace fairlock::detail {

class DeadlineKeeper {
 public:
  using Time = MovableDeadline::Time;
  DeadlineKeeper() = default;
  ~DeadlineKeeper();
  DeadlineKeeper(const DeadlineKeeper&) = delete;
  DeadlineKeeper& operator=(const DeadlineKeeper&) = delete;

  // Lowers `deadline` to `at` and, if calls are in progress under it, cuts
  // the one blocked then.
  void lower(const std::shared_ptr<MovableDeadline>& deadline, Time at);

 private:
  struct Cut {
    Time at;
    std::weak_ptr<MovableDeadline> deadline;
    bool operator>(const Cut& o) const { return at > o.at; }
  };
  void loop();
  std::mutex mu_;
  std::condition_variable cv_;
  std::priority_queue<Cut, std::vector<Cut>, std::greater<>> cuts_;
  bool started_ = false;
  bool stopping_ = false;
  OwnedThread thread_;  // last: stopped before the rest goes
};

}  // namespace fairlock::detail
