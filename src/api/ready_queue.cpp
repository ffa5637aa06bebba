#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>
#include <deque>
#include <mutex>
#include <utility>

#include "fairlock/async.h"
#include "fairlock/errors.h"

namespace fairlock {

namespace detail {

// Shared by the ReadyQueue and the executors it hands out.
class ReadyState {
 public:
  ReadyState() : fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
    if (fd_ < 0) throw Error("fairlock: eventfd failed");
  }
  ~ReadyState() { ::close(fd_); }
  ReadyState(const ReadyState&) = delete;
  ReadyState& operator=(const ReadyState&) = delete;

  int fd() const { return fd_; }
  void push(std::function<void()> f) {
    std::lock_guard<std::mutex> lk(mu_);
    if (closed_) return;
    queued_.push_back(std::move(f));
    const std::uint64_t one = 1;
    ssize_t n = ::write(fd_, &one, sizeof one);  // cannot overflow: drained at every run
    (void)n;
  }
  std::deque<std::function<void()>> take() {
    std::lock_guard<std::mutex> lk(mu_);
    std::uint64_t count = 0;
    ssize_t n = ::read(fd_, &count, sizeof count);  // readable again only when more is queued
    (void)n;
    return std::exchange(queued_, {});
  }
  void close() {
    std::deque<std::function<void()>> dropped;  // destroyed unlocked: they may own anything
    std::lock_guard<std::mutex> lk(mu_);
    closed_ = true;
    dropped.swap(queued_);
  }

 private:
  const int fd_;
  std::mutex mu_;
  std::deque<std::function<void()>> queued_;
  bool closed_ = false;
};

}  // namespace detail

ReadyQueue::ReadyQueue() : state_(std::make_shared<detail::ReadyState>()) {}

ReadyQueue::~ReadyQueue() { state_->close(); }

int ReadyQueue::fd() const noexcept { return state_->fd(); }

std::size_t ReadyQueue::run_ready() {
  auto batch = state_->take();
  for (auto& f : batch) f();
  return batch.size();
}

std::function<void(std::function<void()>)> ReadyQueue::executor() const {
  std::weak_ptr<detail::ReadyState> state = state_;
  return [state](std::function<void()> f) {
    if (auto s = state.lock()) s->push(std::move(f));
  };
}

}  // namespace fairlock
