#include "net/pool.h"

#include <spdlog/spdlog.h>

#include "fairlock/errors.h"
#include "net/call_deadline.h"

namespace fairlock::detail {

Pool::Pool(Target target, std::size_t size, Counters& counters, spdlog::logger& log,
           std::function<void(Connection&)> on_open)
    : target_(std::move(target)), size_(size), counters_(counters), log_(log), on_open_(std::move(on_open)) {}

namespace {
// The target, its connect timeout cut to the call's deadline if nearer.
Target bounded(Target t) {
  if (CallDeadline::binds(t.connect_timeout)) {
    t.connect_timeout = std::max(std::chrono::milliseconds(1), CallDeadline::bound(t.connect_timeout));
  }
  return t;
}
}  // namespace

std::unique_ptr<Connection> Pool::take() {
  std::unique_lock<std::mutex> lk(mu_);
  const auto wait = CallDeadline::bound(target_.command_timeout);
  if (!cv_.wait_for(lk, wait, [&] { return !idle_.empty() || open_ < size_; })) {
    throw TimeoutError(wait < target_.command_timeout ? "fairlock: no free connection before the call's deadline"
                                                      : "fairlock: no free connection within command_timeout");
  }
  while (!idle_.empty()) {
    auto c = std::move(idle_.back());
    idle_.pop_back();
    if (c->idle_and_open()) return c;
    // Closed while idle (server restarted, CLIENT KILL): a command sent on
    // it would fail although the server is up. Open a fresh one instead.
    --open_;
    had_failure_ = true;
    log_.info("fairlock: an idle redis connection was closed by the server; reconnecting");
  }
  if (CallDeadline::passed()) throw TimeoutError("fairlock: the call's deadline passed before a connection was open");
  ++open_;
  lk.unlock();
  try {
    auto c = std::make_unique<Connection>(bounded(target_));
    if (on_open_) on_open_(*c);
    lk.lock();
    if (had_failure_) {
      had_failure_ = false;
      counters_.add(&Stats::reconnects);
      log_.info("fairlock: reconnected to redis");
    }
    return c;
  } catch (...) {
    lk.lock();
    --open_;
    had_failure_ = true;
    cv_.notify_one();
    // Cut by the call's deadline, not refused: the server may be fine.
    if (CallDeadline::passed()) throw TimeoutError("fairlock: no connection open before the call's deadline");
    throw;
  }
}

void Pool::give_back(std::unique_ptr<Connection> c) {
  std::lock_guard<std::mutex> lk(mu_);
  if (c->broken()) {
    --open_;
    had_failure_ = true;
    log_.warn("fairlock: dropped a broken redis connection");
  } else {
    idle_.push_back(std::move(c));
  }
  cv_.notify_one();
}

}  // namespace fairlock::detail
