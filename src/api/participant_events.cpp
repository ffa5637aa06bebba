// What the client's threads tell a Participant (heartbeat replies, wake
// signals, kicks, shutdown), and how a wait is told to look again or to end
// soon.
#include <spdlog/spdlog.h>

#include <string>

#include "api/client_impl.h"
#include "api/participant.h"
#include "base/retry_policy.h"
#include "node/router.h"

namespace fairlock::detail {

using std::chrono::steady_clock;

// The wait should look again: wake the parked thread, or have the async
// thread look at it. Called locked.
void Participant::notify_waiter() {
  if (async_) {
    client_->async().schedule(shared_from_this());
  } else {
    cv_.notify_all();
  }
}

// The wait was cancelled: it ends soon, whatever the server does. A call
// in progress gets a short grace to answer, then it is cut (the caller's
// thread may be blocked in it on a stalled server), and the wait leaves the
// queue within one more; an async wait at shutdown within the shutdown's
// bound (leaves_soon). Called locked.
void Participant::end_soon() {
  notify_waiter();
  const SteadyTime now = steady_clock::now();
  if (!async_) {
    cancel_requested_ = true;  // a subscription it waits for gives up too
    node().wake.nudge();
    return client_->keeper()->lower(calls_, now + retry::kGiveUpGrace);
  }
  if (!leaves_soon()) return unbound_async_rounds();
  if (!async_->deadline || now < *async_->deadline) bound_async_rounds(now);
}

// A cancelled async wait's leave bounds the rounds of calls that carry it
// (now + kGiveUpGrace): its callback comes soon, whatever the server does.
// Not at shutdown: the leaves of every wait left go out together then, and
// one grace for thousands of calls cut most of them on a slow host (3,000
// async waits at shutdown left 68 to 2,584 queued under TSan, two runs at
// once on 2 cores); the shutdown bounds them all by one command_timeout
// (ClientImpl::shutdown), and a wait's own deadline, moot now, no longer
// bounds them (unbound_async_rounds).
bool Participant::leaves_soon() const { return !client_->stopped(); }

// Acts on what an event changed: callbacks run without the lock held.
void Participant::apply(std::unique_lock<std::mutex>& lk, const Effects& fx) {
  if (fx.wake) notify_waiter();
  if (!(fx.position && opts_.on_position) && !fx.lost) return;
  lk.unlock();
  if (fx.position && opts_.on_position) report_position(*fx.position);
  if (fx.lost) report_lost(*fx.lost);
  lk.lock();
}

void Participant::report_position(std::size_t position) noexcept {
  try {
    opts_.on_position(position);
  } catch (const std::exception& e) {
    client_->log().error("fairlock: on_position callback of {} threw: {}", name_, e.what());
  } catch (...) {
    client_->log().error("fairlock: on_position callback of {} threw", name_);
  }
}

void Participant::report_lost(const std::string& why) noexcept {
  client_->log().warn("fairlock: lock {} lost: {}", name_, why);
  if (!opts_.on_lost) return;
  try {
    opts_.on_lost();
  } catch (const std::exception& e) {
    client_->log().error("fairlock: on_lost callback of {} threw: {}", name_, e.what());
  } catch (...) {
    client_->log().error("fairlock: on_lost callback of {} threw", name_);
  }
}

std::optional<SessionMember::Beat> Participant::beat_item(SteadyTime now) {
  std::unique_lock<std::mutex> lk(mu_);
  Effects fx;
  auto item = claim_.beat_item(now, fx);
  apply(lk, fx);
  return item;
}

void Participant::on_beat(const Beat& beat, BeatResult result, SteadyTime sent_at) {
  std::unique_lock<std::mutex> lk(mu_);
  apply(lk, claim_.on_beat(beat.member, beat.holder, beat.lease, result, sent_at));
}

void Participant::on_beat_error(const Beat& beat, const std::string& error) {
  std::lock_guard<std::mutex> lk(mu_);
  claim_.on_beat_error(beat.member, error);
}

bool Participant::on_signal(const std::string& member, std::uint64_t fence) {
  std::lock_guard<std::mutex> lk(mu_);
  if (!claim_.on_signal(member, fence)) return false;
  notify_waiter();
  return true;
}

bool Participant::kick() {
  std::lock_guard<std::mutex> lk(mu_);
  if (!claim_.kick()) return false;
  notify_waiter();
  return true;
}

std::optional<std::uint64_t> Participant::waiting_ticket() const {
  std::lock_guard<std::mutex> lk(mu_);
  return claim_.waiting_ticket();
}

std::optional<std::string> Participant::on_shutdown() {
  std::lock_guard<std::mutex> lk(mu_);
  auto member = claim_.on_shutdown();
  end_soon();  // a wait in progress ends soon, even against a stalled server
  return member;
}

}  // namespace fairlock::detail
