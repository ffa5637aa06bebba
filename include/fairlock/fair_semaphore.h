#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <string>

#include "fairlock/async.h"
#include "fairlock/client.h"
#include "fairlock/options.h"

namespace fairlock {

namespace detail {
class Participant;
}

// What release() found.
enum class Released {
  released,  // the grant was held and is given up; the next waiter has it
  lost,      // the grant had been lost before (lease ran out, evicted, the
             // client shut down): something else may have held it meanwhile
  not_held,  // nothing was held (never locked, or released already)
  failed,    // Redis could not be reached or refused (a broken connection
             // is tried once more on a fresh one). Unless it refused, the
             // release is asked again in the background (backing off up to
             // 500 ms) until it runs, the lease would have ended, or the
             // client shuts down: the next waiter gets the grant then
};

// A fair (FIFO) distributed counting semaphore: at most `permits` holders
// at once, granted strictly in arrival order. One object is one participant
// (one claim at a time). Meets Lockable and TimedLockable.
class FairSemaphore {
 public:
  FairSemaphore(Client& client, std::string name, std::uint32_t permits, LockOptions options = LockOptions());
  ~FairSemaphore();  // cancels a wait / releases a grant, best-effort, never throws
  FairSemaphore(FairSemaphore&&) noexcept;
  FairSemaphore& operator=(FairSemaphore&&) noexcept;
  FairSemaphore(const FairSemaphore&) = delete;
  FairSemaphore& operator=(const FairSemaphore&) = delete;

  // Waits its turn. Throws Cancelled (cancel(), Client shutdown),
  // EvictedError (an operator evicted the waiter: Client::evict),
  // ConnectionError/ServerError, std::logic_error if this object already
  // holds or waits (a grant found lost is held until release() takes it).
  void lock();
  // Takes a permit only if one is free and nobody waits; never queues.
  bool try_lock();
  // Queues; on timeout leaves the queue and returns false. Throws as lock().
  // A timeout <= 0 behaves as try_lock(); an absurdly long one as lock().
  template <class Rep, class Period>
  bool try_lock_for(const std::chrono::duration<Rep, Period>& timeout) {
    return wait_for(std::chrono::duration<double>(timeout));
  }
  template <class Clock, class Duration>
  bool try_lock_until(const std::chrono::time_point<Clock, Duration>& deadline) {
    const auto now = Clock::now();  // compared first: time_point::min() - now overflows
    if (deadline <= now) return wait_for(std::chrono::duration<double>(0));
    return wait_for(std::chrono::duration<double>(deadline - now));
  }
  // Releases the grant and says what it found; never throws. A lost grant
  // is also reported by on_lost, owns_lock() and a warning in the log.
  [[nodiscard]] Released release() noexcept;
  // release() for std guards (BasicLockable): never throws, whatever it
  // found; unlocking what is not held is logged as a warning.
  void unlock() noexcept;
  // --- asynchronous (see fairlock/async.h): return at once, no thread waits.
  // Queues like lock(); `done` runs exactly once when the wait ends (see
  // Options::executor for where). Throws at once, without queueing,
  // std::logic_error if this object already holds (a lost grant too, until
  // release()) or waits, Error once the client is shut down.
  AcquireHandle lock_async(AcquireCallback done);
  // The same with a deadline: TimeoutError when it passes (the queue entry
  // is left as try_lock_for leaves it). A timeout <= 0 tries once.
  AcquireHandle lock_async(std::chrono::milliseconds timeout, AcquireCallback done);
  // lock_async as a future: the fence, or the error thrown by get().
  std::future<std::uint64_t> lock_future();
  std::future<std::uint64_t> lock_future(std::chrono::milliseconds timeout);
  // release() on the client's async thread; `done` (may be empty) gets
  // what release() would return.
  void release_async(std::function<void(Released)> done = {});

  // Makes a lock()/try_lock_for() blocked in another thread leave the queue
  // and throw Cancelled (an asynchronous wait: its callback gets Cancelled).
  // Harmless when nothing waits.
  void cancel() noexcept;

  // True while the grant is held and not known to be lost.
  bool owns_lock() const noexcept;
  // The fencing token of the current (or last) grant; 0 before any.
  std::uint64_t fence() const noexcept;
  const std::string& name() const noexcept;
  std::uint32_t permits() const noexcept;

 private:
  bool wait_for(std::chrono::duration<double> timeout);
  std::shared_ptr<detail::Participant> p_;
};

}  // namespace fairlock
