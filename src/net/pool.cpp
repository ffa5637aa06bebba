#include "net/pool.h"

#include <spdlog/spdlog.h>

#include "base/retry_policy.h"
#include "fairlock/errors.h"
#include "net/call_deadline.h"
#include "net/open_connection.h"

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

// Waits for a free connection, at most command_timeout or until the
// call's deadline. The deadline may move nearer meanwhile (a cancel:
// MovableDeadline), which nothing would tell this wait: while every
// connection is taken (a stalled server holds them all), it looks again
// every retry::kDeadlineCheck.
void Pool::wait_for_free(std::unique_lock<std::mutex>& lk) {
  const auto end = std::chrono::steady_clock::now() + target_.command_timeout;
  for (;;) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
    const auto wait = CallDeadline::bound(left);
    if (wait.count() <= 0) {
      throw TimeoutError(CallDeadline::passed() ? "fairlock: no free connection before the call's deadline"
                                                : "fairlock: no free connection within command_timeout");
    }
    const auto slice = CallDeadline::may_move() ? std::min(wait, retry::kDeadlineCheck) : wait;
    if (cv_.wait_for(lk, slice, [&] { return !idle_.empty() || open_ < size_; })) return;
  }
}

std::unique_ptr<Connection> Pool::take() {
  std::unique_lock<std::mutex> lk(mu_);
  wait_for_free(lk);
  while (!idle_.empty()) {
    auto c = std::move(idle_.back());
    idle_.pop_back();
    if (outdated(target_, *c)) {  // to a master that was replaced since: asks the sentinels again
      --open_;
      continue;
    }
    if (c->idle_and_open()) return c;
    // Closed while idle (server restarted, CLIENT KILL): a command sent on
    // it would fail although the server is up. Open a fresh one instead.
    --open_;
    had_failure_ = true;
    log_.info("fairlock: an idle redis connection was closed by the server; reconnecting");
  }
  if (CallDeadline::passed()) {
    cv_.notify_one();  // closed idle connections above made room for another caller
    throw TimeoutError("fairlock: the call's deadline passed before a connection was open");
  }
  ++open_;
  lk.unlock();
  try {
    auto c = open_connection(bounded(target_));
    if (on_open_) on_open_(*c);
    reached_ = true;
    lk.lock();
    if (had_failure_) {
      had_failure_ = false;
      counters_.add(&Stats::reconnects);
      log_.info("fairlock: reconnected to redis");
    }
    return c;
  } catch (const ConnectionError& e) {
    dial_failed(lk);
    // Cut by the call's deadline, not refused (a certificate or a port
    // that speaks no TLS is, whenever it comes; a handshake with no reply
    // is cut by that deadline too): the server may be fine.
    const auto* tls = dynamic_cast<const TlsError*>(&e);
    if (CallDeadline::passed() && (tls == nullptr || tls->reason() == TlsError::Reason::no_handshake)) {
      throw TimeoutError(std::string("fairlock: no connection open before the call's deadline (") + e.what() + ")");
    }
    throw;
  } catch (...) {
    dial_failed(lk);
    throw;
  }
}

void Pool::dial_failed(std::unique_lock<std::mutex>& lk) {
  lk.lock();
  --open_;
  had_failure_ = true;
  cv_.notify_one();
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
