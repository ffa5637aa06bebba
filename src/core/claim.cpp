#include "core/claim.h"

#include <algorithm>
#include <stdexcept>

#include "base/retry_policy.h"

namespace fairlock::detail {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

// ---------------------------------------------------------------- a wait

void Claim::begin(std::string member, bool queue, std::optional<SteadyTime> deadline, const std::string& name) {
  if (state_ == State::held) throw std::logic_error("fairlock: " + name + " is already held by this object");
  if (state_ == State::waiting) throw std::logic_error("fairlock: " + name + " is already waiting in another thread");
  // A grant found lost is still the object's until release() takes it: the
  // thread that holds it will call release() (a guard's unlock()), and
  // must not release a later wait's grant instead.
  if (state_ == State::lost) {
    throw std::logic_error("fairlock: " + name + " holds a grant found lost: release() it before waiting again");
  }
  state_ = State::waiting;
  member_ = std::move(member);
  queue_ = queue;
  deadline_ = deadline;
  outcome_.reset();
  sent_ask_ = asked_ = maybe_queued_ = counted_wait_ = false;
  refreshed_at_ = SteadyTime{};
  ticket_ = 0;
  position_ = next_expiry_ms_ = -1;
  signalled_ = kicked_ = cancelled_ = lease_confirmed_ = false;
  timer_at_.reset();
  retry_at_.reset();
  failing_since_.reset();
  backoff_ = retry::kFirstBackoff;
  lost_reason_.clear();
  beat_error_.clear();
}

Step Claim::next(SteadyTime now, const WaitContext& ctx) {
  if (outcome_) return Step{*outcome_};
  if (!asked_ && !retry_at_ && !cancelled_ && !ctx.stopped) return ask(queue_);
  if (auto granted = take_signal(now)) return *granted;
  if (cancelled_ || ctx.stopped) return Step{Step::Kind::cancelled};  // before the first ask too
  if (deadline_ && now >= *deadline_) return Step{Step::Kind::give_up};
  const bool timer = timer_at_ && now >= *timer_at_;
  const bool retry = retry_at_ && now >= *retry_at_;
  const bool kicked = kicked_ && !retry_at_;  // a kick does not cut a backoff short
  if (kicked || timer || retry) {
    if (timer && !kicked && !retry) counters_.add(&Stats::wakes_timer);
    kicked_ = false;               // before asking: a kick that lands while we ask is kept
    return ask(asked_ || queue_);  // once queued, a re-ask never just tries
  }
  if (retry_at_) return Step{Step::Kind::wait, deadline_ ? std::min(*retry_at_, *deadline_) : *retry_at_};
  timer_at_ = wake_time(now, ctx);
  return Step{Step::Kind::wait, *timer_at_};
}

Step Claim::ask(bool queue) {
  timer_at_.reset();
  retry_at_.reset();
  const bool first = !sent_ask_;
  sent_ask_ = true;
  return Step{Step::Kind::ask, {}, queue, first};
}

// A grant handed to us (PUBLISH or heartbeat) needs no round trip, if it is
// for our current place and still fresh.
std::optional<Step> Claim::take_signal(SteadyTime now) {
  if (!signalled_) return std::nullopt;
  signalled_ = false;
  const SteadyTime valid = lease_confirmed_ ? valid_until_ : refreshed_at_ + handoff_validity();
  if (signal_fence_ != ticket_) {
    lease_confirmed_ = false;  // a grant of an earlier place we no longer hold: ignore
  } else if (valid <= now) {
    lease_confirmed_ = false;
    kicked_ = true;  // too late to trust it blindly: ask Redis
  } else {
    return granted_with(signal_fence_, valid);  // the next heartbeat renews it once (beat_item)
  }
  return std::nullopt;
}

// The server reads its clock in whole ms (TIME floored: lua/lib.lua), so a
// deadline it sets n ms from its "now" falls up to 1 ms short of n ms from
// any later instant, our send time included: every validity loses that step.
constexpr milliseconds kServerClockStep{1};

// How long a grant handed to this wait inside another call lasts at least,
// counted from the send time of the last call that saw it still waiting:
// the server gives it min(our process's liveness deadline, grant time +
// our lease) (docs/PROTOCOL.md), and both are at least that far from then
// (less the server's clock step).
std::chrono::milliseconds Claim::handoff_validity() const {
  return std::min(cfg_.lease, cfg_.liveness) - kServerClockStep;
}

// A grant the server reported with `remaining_ms` left, in the reply to a
// call sent at `sent`: valid until sent + remaining_ms less the server's
// clock step, never longer. (The server took its time after we sent, so
// its deadline is no earlier.)
SteadyTime Claim::server_deadline(SteadyTime sent, long long remaining_ms) {
  return sent + milliseconds(std::max(0LL, remaining_ms)) - kServerClockStep;
}

Step Claim::granted_with(std::uint64_t fence, SteadyTime valid_until) {
  state_ = State::held;
  fence_ = fence;
  valid_until_ = valid_until;
  outcome_ = Step::Kind::granted;
  counters_.add(&Stats::grants);
  return Step{Step::Kind::granted};
}

SteadyTime Claim::wake_time(SteadyTime now, const WaitContext& ctx) const {
  SteadyTime at = deadline_ ? *deadline_ : now + std::chrono::hours(24);
  at = std::min(at, now + (ctx.signals ? steady_clock::duration(cfg_.liveness) : poll_interval(ctx.heartbeat_period)));
  if (position_ >= 0 && position_ < static_cast<long long>(cfg_.permits) && next_expiry_ms_ >= 0) {
    at = std::min(at, std::max(expiry_at_, now + milliseconds(1)));  // a lease may run out
  }
  return at;
}

std::chrono::steady_clock::duration Claim::poll_interval(milliseconds heartbeat_period) const {
  // Position-aware: the head polls every 10 ms, place k behind it every
  // 10 * (k + 1) ms, never slower than the heartbeat (which also reports
  // grants). Linear, not exponential: a waiter's position is only as fresh
  // as its last poll, and the queue moves one place per grant, so a waiter
  // must not sleep through many grants before it learns it is next. The
  // total rate over a queue of n grows only as log(n) (a harmonic sum) up
  // to the heartbeat cap.
  long long behind = std::max(0LL, position_ - static_cast<long long>(cfg_.permits) + 1);
  milliseconds slow = milliseconds(10) * (std::min<long long>(behind, 100000) + 1);
  return std::min<steady_clock::duration>(slow, heartbeat_period);
}

// The earliest holder's deadline, `next_ms` after a call sent at `sent`
// (-1: no holder): a waiter within the permits wakes then, since a lease
// may run out without a release (or a handoff to a dead waiter expire).
void Claim::note_next_expiry(long long next_ms, SteadyTime sent) {
  next_expiry_ms_ = next_ms;
  expiry_at_ = sent + milliseconds(std::max(0LL, next_ms) + 2);
}

Effects Claim::on_acquired(const Acquired& reply, SteadyTime sent) {
  asked_ = true;
  backoff_ = retry::kFirstBackoff;
  failing_since_.reset();
  Effects fx;
  switch (reply.status) {
    case Acquired::Status::granted:
      lease_confirmed_ = true;
      granted_with(reply.fence, server_deadline(sent, reply.remaining_ms));
      return fx;
    case Acquired::Status::busy:
      state_ = State::idle;
      outcome_ = Step::Kind::busy;
      return fx;
    case Acquired::Status::queued: break;
  }
  if (!counted_wait_) {
    counted_wait_ = true;
    counters_.add(&Stats::waits);
  }
  ticket_ = reply.ticket;
  if (position_ != reply.position) fx.position = static_cast<std::size_t>(std::max(0LL, reply.position));
  position_ = reply.position;
  note_next_expiry(reply.next_expiry_ms, sent);
  refreshed_at_ = std::max(refreshed_at_, sent);
  last_ok_ = sent;
  return fx;
}

bool Claim::on_ask_failed(SteadyTime sent, SteadyTime now, Failure failure) {
  if (!failing_since_) failing_since_ = now;
  const bool at_deadline = deadline_ && now >= *deadline_;
  // A queued wait whose call may have run ends at its deadline as any other:
  // it times out and leaves the queue (give_up), whatever the server does.
  const bool times_out =
      at_deadline && queue_ && failure != Failure::refused && (asked_ || maybe_queued_ || failure == Failure::in_doubt);
  if (!may_retry(sent, now, failure) && !times_out) return false;
  retry_at_ = at_deadline ? now : now + backoff_;  // at the deadline: next() gives up at once
  backoff_ = std::min(backoff_ * 2, retry::kMaxBackoff);
  return true;
}

bool Claim::may_retry(SteadyTime sent, SteadyTime now, Failure failure) {
  switch (failure) {
    case Failure::refused: return false;
    case Failure::not_run:
      // Nothing ran, so a retry is safe, but a try must not wait, and a
      // cache flushed for a whole liveness period is a broken server.
      return queue_ && (deadline_ || now - *failing_since_ <= cfg_.liveness);
    case Failure::in_doubt:
      if (!asked_ && !maybe_queued_) {
        // The first call may have queued us (a restart or a killed
        // connection in flight): retry as a queued waiter does, with the
        // same member, which finds its entry if it is there. A try ends:
        // the blocking driver leaves, releasing what it may have been
        // granted; the async one lets it run out (see fail_async).
        if (!queue_) return false;
        maybe_queued_ = true;
        last_ok_ = now;        // retries run for a liveness from here,
        refreshed_at_ = sent;  // and that entry lives until sent + liveness at least (a grant's validity)
      }
      break;
    case Failure::unsent:
      // A server down from the start is reported at once.
      if (!asked_ && !maybe_queued_) return false;
      break;
  }
  // A timed wait retries until its deadline, then times out as any other
  // (an entry that expired meanwhile is queued again at the tail). An
  // untimed one retries until its entry would have expired unless this
  // process's other waiters on the name keep its liveness (docs/PROTOCOL.md
  // §2); then the wait fails, and leaving cancels the entry (or abandons
  // it, §7).
  if (deadline_) return true;
  return now - std::max(last_ok_, refreshed_at_) <= cfg_.liveness;
}

void Claim::on_gave_up(const CancelResult& reply, SteadyTime sent) {
  if (reply.status == CancelResult::Status::granted) {
    // Granted while we were giving up (a handoff, or a call of ours that
    // ran late): keep it, for exactly as long as the server says.
    lease_confirmed_ = true;
    granted_with(reply.fence, server_deadline(sent, reply.remaining_ms));
    return;
  }
  state_ = State::idle;
  outcome_ = Step::Kind::timed_out;
  counters_.add(&Stats::timeouts);
}

void Claim::finish_cancelled() {
  state_ = State::idle;
  outcome_ = Step::Kind::cancelled;
  counters_.add(&Stats::cancels);
}

void Claim::abort() {
  state_ = State::idle;
  outcome_ = Step::Kind::cancelled;
}

// ---------------------------------------------------------------- a grant

ReleasePlan Claim::begin_release() {
  ReleasePlan plan;
  if (state_ == State::idle || state_ == State::waiting) return plan;
  plan.member = member_;
  plan.queued_first = ticket_ != 0;
  if (state_ == State::shut_down) {
    plan.kind = ReleasePlan::Kind::released_at_shutdown;
  } else {
    plan.kind = ReleasePlan::Kind::release;
    if (state_ == State::lost) plan.lost_reason = lost_reason_;
  }
  state_ = State::idle;
  return plan;
}

std::optional<std::string> Claim::on_shutdown() {
  if (state_ == State::waiting) {
    cancelled_ = true;
  } else if (state_ == State::held) {
    state_ = State::shut_down;
    return member_;
  }
  return std::nullopt;
}

bool Claim::cancel() {
  if (state_ != State::waiting) return false;
  cancelled_ = true;
  return true;
}

std::string Claim::mark_lost(std::string why) {
  state_ = State::lost;
  lost_reason_ = why;
  counters_.add(&Stats::lost);
  return why;
}

// ---------------------------------------------------------------- the session's events

std::optional<SessionMember::Beat> Claim::beat_item(SteadyTime now, Effects& effects) {
  if (state_ == State::waiting) return SessionMember::Beat{member_, cfg_.lease, false};
  if (state_ != State::held) return std::nullopt;
  if (now >= valid_until_) {
    std::string why = "lease ran out before a renewal succeeded";
    if (!beat_error_.empty()) why += " (last heartbeat error: " + beat_error_ + ")";
    effects.lost = mark_lost(why);
    return std::nullopt;
  }
  if (cfg_.auto_renew || !lease_confirmed_) return SessionMember::Beat{member_, cfg_.lease, true};
  // Not renewed, but checked: an eviction or a loss is learned within one
  // heartbeat interval.
  return SessionMember::Beat{member_, milliseconds(0), true};
}

Effects Claim::on_beat(const std::string& member, bool sent_as_holder, std::chrono::milliseconds sent_lease,
                       BeatResult result, SteadyTime sent_at) {
  Effects fx;
  if (member != member_) return fx;
  beat_error_.clear();
  if (state_ == State::waiting) {
    fx.wake = true;
    if (result.status == BeatResult::Status::waiting) {
      refreshed_at_ = std::max(refreshed_at_, sent_at);
      if (position_ != result.value) fx.position = static_cast<std::size_t>(std::max(0LL, result.value));
      position_ = result.value;
      note_next_expiry(result.ms, sent_at);
    } else if (result.status == BeatResult::Status::holding && !signalled_ && result.value > 0) {
      signalled_ = true;
      signal_fence_ = static_cast<std::uint64_t>(result.value);
      lease_confirmed_ = true;  // a waiter's beat carries its lease: it renewed the grant
      valid_until_ = server_deadline(sent_at, result.ms);
      counters_.add(&Stats::wakes_heartbeat);
    } else if (result.status == BeatResult::Status::gone) {
      kicked_ = true;  // our entry expired: acquire again (joins at the tail)
    }
  } else if (state_ == State::held) {
    if (result.status == BeatResult::Status::holding && static_cast<std::uint64_t>(result.value) == fence_) {
      valid_until_ = std::max(valid_until_, server_deadline(sent_at, result.ms));
      if (sent_lease.count() > 0) lease_confirmed_ = true;
    } else if (sent_as_holder) {  // a beat sent while we still waited says nothing about the grant
      fx.lost = mark_lost("the grant is gone from Redis (expired or evicted)");
    }
  }
  return fx;
}

void Claim::on_beat_error(const std::string& member, const std::string& error) {
  if (member == member_) beat_error_ = error;
}

bool Claim::on_signal(const std::string& member, std::uint64_t fence) {
  if (member != member_ || state_ != State::waiting || signalled_) return false;
  signalled_ = true;
  signal_fence_ = fence;
  counters_.add(&Stats::wakes_signal);  // before the waiter runs on
  return true;
}

bool Claim::kick() {
  if (state_ != State::waiting) return false;
  kicked_ = true;
  return true;
}

std::optional<std::uint64_t> Claim::waiting_ticket() const {
  if (state_ == State::waiting && !kicked_ && !signalled_ && ticket_ != 0) return ticket_;
  return std::nullopt;
}

}  // namespace fairlock::detail
