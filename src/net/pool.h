#pragma once
// A fixed-size pool of blocking connections to one server, created lazily;
// a connection is used by one thread at a time and dropped when it breaks.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "base/counters.h"
#include "net/connection.h"

namespace spdlog {
class logger;
}

namespace fairlock::detail {

class Pool {
 public:
  // `on_open` runs on each new connection before its first use; what it
  // throws, the call that needed the connection throws (it is not kept).
  Pool(Target target, std::size_t size, Counters& counters, spdlog::logger& log,
       std::function<void(Connection&)> on_open = {});
  template <class F>
  auto with(F&& f) -> decltype(f(std::declval<Connection&>())) {
    std::unique_ptr<Connection> c = take();
    try {
      auto result = f(*c);
      give_back(std::move(c));
      return result;
    } catch (...) {
      give_back(std::move(c));
      throw;
    }
  }
  // True once a connection was opened (and passed its checks): the server
  // was there, so a failure to connect now is it going away, not a setup
  // that never worked.
  bool reached() const noexcept { return reached_.load(); }

 private:
  std::unique_ptr<Connection> take();
  void wait_for_free(std::unique_lock<std::mutex>& lk);
  void dial_failed(std::unique_lock<std::mutex>& lk);
  void give_back(std::unique_ptr<Connection> c);
  const Target target_;
  const std::size_t size_;
  Counters& counters_;
  spdlog::logger& log_;
  const std::function<void(Connection&)> on_open_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Connection>> idle_;
  std::size_t open_ = 0;
  bool had_failure_ = false;
  std::atomic<bool> reached_{false};  // a connection was ever opened (and checked)
};

}  // namespace fairlock::detail
