// What the client's threads tell a claim (heartbeat replies, wake
// signals, kicks, shutdown), and how what they change reaches the user's
// callbacks (queue positions, losses).
#include <spdlog/spdlog.h>

#include <string>

#include "api/claim_core.h"
#include "api/client_impl.h"

namespace fairlock::detail {

// Acts on what an event changed: callbacks run without the lock held.
void ClaimCore::apply(std::unique_lock<std::mutex>& lk, const Effects& fx) {
  if (fx.wake) notify_waiter();
  if (!(fx.position && opts_.on_position) && !fx.lost) return;
  lk.unlock();
  if (fx.position && opts_.on_position) report_position(*fx.position);
  if (fx.lost) report_lost(*fx.lost);
  lk.lock();
}

void ClaimCore::report_position(std::size_t position) noexcept {
  try {
    opts_.on_position(position);
  } catch (const std::exception& e) {
    client_->log().error("fairlock: on_position callback of {} threw: {}", name_, e.what());
  } catch (...) {
    client_->log().error("fairlock: on_position callback of {} threw", name_);
  }
}

void ClaimCore::report_lost(const std::string& why) noexcept {
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

std::optional<SessionMember::Beat> ClaimCore::beat_item(SteadyTime now) {
  std::unique_lock<std::mutex> lk(mu_);
  Effects fx;
  auto item = claim_.beat_item(now, fx);
  apply(lk, fx);
  return item;
}

void ClaimCore::on_beat(const Beat& beat, BeatResult result, SteadyTime sent_at) {
  std::unique_lock<std::mutex> lk(mu_);
  apply(lk, claim_.on_beat(beat.member, beat.holder, beat.lease, result, sent_at));
}

void ClaimCore::on_beat_error(const Beat& beat, const std::string& error) {
  std::lock_guard<std::mutex> lk(mu_);
  claim_.on_beat_error(beat.member, error);
}

bool ClaimCore::on_signal(const std::string& member, std::uint64_t fence) {
  std::lock_guard<std::mutex> lk(mu_);
  if (!claim_.on_signal(member, fence)) return false;
  notify_waiter();
  return true;
}

bool ClaimCore::kick() {
  std::lock_guard<std::mutex> lk(mu_);
  if (!claim_.kick()) return false;
  notify_waiter();
  return true;
}

std::optional<std::uint64_t> ClaimCore::waiting_ticket() const {
  std::lock_guard<std::mutex> lk(mu_);
  return claim_.waiting_ticket();
}

std::optional<std::string> ClaimCore::on_shutdown() {
  std::lock_guard<std::mutex> lk(mu_);
  auto member = claim_.on_shutdown();
  end_soon();  // a wait in progress ends soon, even against a stalled server
  return member;
}

}  // namespace fairlock::detail
