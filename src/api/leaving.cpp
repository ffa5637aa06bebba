// Leaving the queue, for both drivers: at the deadline (give_up), after
// an error or a cancel (fail_wait, leave_within), or in the background once
// the wait has ended (leave_later); a grant found on the way out is released.
#include "api/leaving.h"

#include <spdlog/spdlog.h>

#include <exception>
#include <functional>
#include <string>

#include "api/client_impl.h"
#include "base/retry_policy.h"
#include "net/call_deadline.h"
#include "node/router.h"
#include "node/server_calls.h"

namespace fairlock::detail {

using std::chrono::steady_clock;

// The deadline passed: leave the queue, learning whether a grant came
// meanwhile (kept, for as long as the server says). The call gets a short
// grace from the deadline (Claim::leave_by), not the whole command_timeout:
// if the server does not answer in time, the wait times out now and the
// leave is settled in the background.
void Leaving::give_up(std::unique_lock<std::mutex>& lk, const std::string& member) {
  const SteadyTime sent = steady_clock::now();
  const SteadyTime until = claim_.leave_by(sent);
  lk.unlock();
  CancelResult left;
  try {
    const CallDeadline bound(until);
    left = detail::cancel(node().server, keys_, member, permits_);
  } catch (const Error& e) {
    client_->log().debug("fairlock: leaving the queue of {} at the deadline: {}; settling it in the background", name_,
                         e.what());
    leave_later(member);
  }
  lk.lock();
  claim_.on_gave_up(left, sent);
}

// A wait ends with an error: if it still queues, it leaves (best effort,
// whatever went wrong), with a cancel call unless `call_server` is false
// (then its entry goes as an abandoned one: see settle_leave). Called locked,
// returns unlocked.
void Leaving::fail_wait(std::unique_lock<std::mutex>& lk, const std::string& member, bool call_server) noexcept {
  // Only this wait's own: once it has ended, another thread may have begun
  // the object's next wait, which this one must never touch.
  const bool still_waiting = claim_.waiting() && claim_.member() == member;
  const SteadyTime until = claim_.leave_by(steady_clock::now());  // by the deadline's grace at the latest
  if (still_waiting) claim_.abort();
  lk.unlock();
  if (!still_waiting) return;
  if (call_server) {
    leave_within(member, until);  // an error: the server may be in trouble
  } else {
    client_->session().delist(member);
  }
}

// Leaves the queue, until `until` at most: then it is settled in the background.
void Leaving::leave_within(const std::string& member, SteadyTime until) noexcept {
  client_->session().delist(member);
  const CallDeadline bound(until);  // the release of a grant it finds too
  settle_leave(
      member, [&] { return detail::cancel(node().server, keys_, member, permits_); }, [&] { leave_later(member); });
}

// Leaves the queue in the background, for a wait that has already ended:
// the cancel (and the release of a grant it finds) ride with the async
// thread's next round of calls. If they fail too, the entry goes as an
// abandoned one (see settle_leave).
void Leaving::leave_later(const std::string& member) noexcept {
  client_->session().delist(member);
  try {
    client_->async().post_call(
        node().server, cancel_call(keys_, member, permits_),
        [self = shared_as(this), member](const redisReply* reply, const std::exception_ptr& error) {
          self->left_later(member, reply, error);
        });
  } catch (const std::exception& e) {
    client_->log().warn("fairlock: could not leave the queue of {}: {}", name_, e.what());
  }
}

void Leaving::left_later(const std::string& member, const redisReply* reply, const std::exception_ptr& error) noexcept {
  try {
    if (error) std::rethrow_exception(error);
    const CancelResult r = parse_cancelled(*reply);
    note_released(member, true);
    if (r.status != CancelResult::Status::granted) return;
    client_->async().post_call(node().server, release_call(keys_, member, permits_, true),
                               [self = shared_as(this)](const redisReply* r, const std::exception_ptr& e) {
                                 if (e || is_error(*r)) self->log_abandoned("the release of a grant it found failed");
                               });
  } catch (const std::exception& e) {
    log_abandoned(e.what());
  }
}

void Leaving::log_abandoned(const std::string& why) noexcept {
  client_->log().warn(
      "fairlock: could not leave the queue of {} ({}): the entry goes at this process's next heartbeat of the name "
      "(if it queued), or a liveness_ttl after this process last waits there; a grant it gets first lasts its "
      "lease, capped by that liveness",
      name_, why);
}

// What the cancel call of a leave found (`left` returns it, or throws how
// the call failed): a grant handed over meanwhile is released. Best effort:
// if this fails the entry is abandoned. It lives while this process's
// liveness on the name does (docs/PROTOCOL.md: one per process, renewed for
// its other waiters there), unless this process's next heartbeat of the
// name removes it first (its floor, the latest ticket learned, covers it:
// lua/heartbeat.lua). If it reaches the head first, its grant runs out by
// its lease, capped by that liveness: nobody renews it.
void Leaving::settle_leave(const std::string& member, const std::function<CancelResult()>& left,
                           const std::function<void()>& on_failure) noexcept {
  try {
    // Granted while it was giving up: by a handoff, as a rule (a wrong hint
    // costs up to three commands, no other answer: lua/release.lua).
    const CancelResult r = left();
    note_released(member, true);
    if (r.status == CancelResult::Status::granted) detail::release(node().server, keys_, member, permits_, true);
  } catch (const std::exception& e) {
    if (on_failure) {
      client_->log().debug("fairlock: leaving the queue of {}: {}; settling it in the background", name_, e.what());
      on_failure();
      return;
    }
    client_->log().warn("fairlock: could not leave the queue of {}: {}", name_, e.what());
  }
}

}  // namespace fairlock::detail
