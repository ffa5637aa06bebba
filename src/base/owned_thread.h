#pragma once
// A thread its owner starts and stops: stop() joins it, unless it runs on
// that thread itself (a user's callback that shuts the client down, or drops
// the last reference to it): then the thread is detached, ends by itself,
// and must not touch its owner again (see Heartbeat::loop for how). join()
// only joins: on the thread itself it leaves the thread to a later stop().
#include <mutex>
#include <thread>
#include <utility>

namespace fairlock::detail {

class OwnedThread {
 public:
  OwnedThread() = default;
  ~OwnedThread() { stop(); }
  OwnedThread(const OwnedThread&) = delete;
  OwnedThread& operator=(const OwnedThread&) = delete;

  template <class F>
  void start(F&& body) {
    std::lock_guard<std::mutex> lk(join_mu_);
    thread_ = std::thread(std::forward<F>(body));
    id_ = thread_.get_id();
  }
  bool is_current() const { return id_ == std::this_thread::get_id(); }

  // Joins the thread, from any other thread (several may call it at once).
  // On the thread itself: returns; the thread ends by itself once its body
  // returns, and a later join() or stop() from another thread joins it.
  void join() noexcept {
    if (is_current()) return;
    std::lock_guard<std::mutex> lk(join_mu_);
    if (thread_.joinable()) thread_.join();
  }
  // As join(), but on the thread itself detaches it, unless another thread
  // is joining it now (then that join completes once the thread returns).
  void stop() noexcept {
    if (!is_current()) return join();
    std::unique_lock<std::mutex> lk(join_mu_, std::try_to_lock);
    if (lk.owns_lock() && thread_.joinable()) thread_.detach();
  }

 private:
  std::thread thread_;
  std::thread::id id_;  // set once by start(), before anyone may stop it
  std::mutex join_mu_;
};

}  // namespace fairlock::detail
