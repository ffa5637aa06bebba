#pragma once
// Asynchronous waits: FairSemaphore::lock_async and friends return at once;
// the client's own thread drives every wait (no thread per waiter) and calls
// back when the wait ends. Where the callbacks run: see Options::executor.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>

namespace fairlock {

namespace detail {
class Participant;
class ReadyState;
}  // namespace detail

// How an asynchronous acquire ended: granted with a fence, or an error.
class AcquireResult {
 public:
  static AcquireResult granted_with(std::uint64_t fence) { return AcquireResult(fence, nullptr); }
  static AcquireResult failed_with(std::exception_ptr error) { return AcquireResult(0, std::move(error)); }

  bool granted() const noexcept { return !error_; }
  explicit operator bool() const noexcept { return granted(); }
  // The grant's fencing token (0 when not granted).
  std::uint64_t fence() const noexcept { return fence_; }
  // Why it was not granted: TimeoutError (the deadline passed, or a try
  // found it busy), Cancelled (cancel(), the object or the Client went
  // away), EvictedError (an operator evicted the waiter), ConnectionError /
  // TlsError, ServerError / PermitsMismatch.
  // Null when granted.
  const std::exception_ptr& error() const noexcept { return error_; }
  // Throws error() if not granted.
  void rethrow() const {
    if (error_) std::rethrow_exception(error_);
  }

 private:
  AcquireResult(std::uint64_t fence, std::exception_ptr error) : fence_(fence), error_(std::move(error)) {}
  std::uint64_t fence_;
  std::exception_ptr error_;
};

using AcquireCallback = std::function<void(const AcquireResult&)>;

// Cancels one asynchronous acquire. Copyable; harmless once the wait ended
// (it never touches a later wait of the same object).
class AcquireHandle {
 public:
  AcquireHandle() = default;
  AcquireHandle(std::weak_ptr<detail::Participant> p, std::uint64_t wait) : p_(std::move(p)), wait_(wait) {}
  // Leaves the queue as a timed-out wait does. The callback still runs
  // exactly once: with Cancelled, or with the grant if the grant came first
  // (it is then yours to release). Never blocks, never throws.
  void cancel() const noexcept;

 private:
  std::weak_ptr<detail::Participant> p_;
  std::uint64_t wait_ = 0;
};

// An executor for a poll/epoll event loop: callbacks handed to it queue up
// and fd() (an eventfd) is readable while any is queued; run_ready() runs
// them on the caller's thread. Pass executor() as Options::executor.
class ReadyQueue {
 public:
  ReadyQueue();
  ~ReadyQueue();
  ReadyQueue(const ReadyQueue&) = delete;
  ReadyQueue& operator=(const ReadyQueue&) = delete;

  // Watch it for POLLIN / EPOLLIN; non-blocking, close-on-exec.
  int fd() const noexcept;
  // Runs the callbacks queued now (not those they queue); returns how many.
  std::size_t run_ready();
  // For Options::executor. It stays valid after the ReadyQueue is gone (a
  // callback queued then is dropped without running).
  std::function<void(std::function<void()>)> executor() const;

 private:
  std::shared_ptr<detail::ReadyState> state_;
};

}  // namespace fairlock
