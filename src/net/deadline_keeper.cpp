#include "net/deadline_keeper.h"

#include <system_error>
#include <utility>
#include <vector>

namespace fairlock::detail {

DeadlineKeeper::~DeadlineKeeper() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.stop();
}

void DeadlineKeeper::lower(const std::shared_ptr<MovableDeadline>& deadline, Time at) {
  if (!deadline->lower(at)) return;
  std::lock_guard<std::mutex> lk(mu_);
  cuts_.push(Cut{at, deadline});
  if (!started_) {
    try {
      thread_.start([this] { loop(); });
      started_ = true;
    } catch (const std::system_error&) {
      // No thread to be had now: this cut is lost (the call ends by the
      // bound it began with), the next lower() tries again.
      return;
    }
  }
  cv_.notify_all();
}

void DeadlineKeeper::loop() {
  std::unique_lock<std::mutex> lk(mu_);
  while (!stopping_) {
    const auto now = std::chrono::steady_clock::now();
    std::vector<std::shared_ptr<MovableDeadline>> due;
    for (; !cuts_.empty() && cuts_.top().at <= now; cuts_.pop()) {
      if (auto d = cuts_.top().deadline.lock()) due.push_back(std::move(d));
    }
    if (!due.empty()) {
      lk.unlock();
      for (const auto& d : due) d->cut_if_due();
      lk.lock();
    } else if (cuts_.empty()) {
      cv_.wait(lk);
    } else {
      const Time until = cuts_.top().at;  // a copy: lower() may reallocate the queue while this waits
      cv_.wait_until(lk, until);
    }
  }
}

}  // namespace fairlock::detail
