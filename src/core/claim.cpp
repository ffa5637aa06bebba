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
  if (waiting()) throw std::logic_error("fairlock: " + name + " is already waiting in another thread");
  // A grant found lost is still the object's until release() takes it: the
  // thread that holds it will call release() (a guard's unlock()), and
  // must not release a later wait's grant instead.
  if (state_ == State::lost) {
    throw std::logic_error("fairlock: " + name + " holds a grant found lost: release() it before waiting again");
  }
  state_ = State::waiting;
  wait_ = Wait{std::move(member), queue, deadline};
  grant_ = Grant{grant_.fence};  // fence(): the last grant's until the next one
}

Step Claim::next(SteadyTime now, const WaitContext& ctx) {
  if (wait_.outcome) return Step{*wait_.outcome};
  if (state_ == State::confirming) return confirm_step(now, ctx);
  if (!wait_.asked && !wait_.retry_at && !wait_.cancelled && !ctx.stopped) return ask(wait_.queue, now);
  if (auto granted = take_signal(now, ctx)) return *granted;
  if (wait_.cancelled || ctx.stopped) return Step{Step::Kind::cancelled};  // before the first ask too
  if (wait_.deadline && now >= *wait_.deadline) return Step{Step::Kind::give_up};
  const bool timer = wait_.timer_at && now >= *wait_.timer_at;
  const bool retry = wait_.retry_at && now >= *wait_.retry_at;
  const bool kicked = wait_.kicked && !wait_.retry_at;  // a kick does not cut a backoff short
  if (kicked || timer || retry) {
    if (timer && !kicked && !retry) counters_.add(&Stats::wakes_timer);
    wait_.kicked = false;                         // before asking: a kick that lands while we ask is kept
    return ask(wait_.asked || wait_.queue, now);  // once queued, a re-ask never just tries
  }
  if (wait_.retry_at)
    return Step{Step::Kind::wait, wait_.deadline ? std::min(*wait_.retry_at, *wait_.deadline) : *wait_.retry_at};
  wait_.timer_at = wake_time(now, ctx);
  return Step{Step::Kind::wait, *wait_.timer_at};
}

Step Claim::ask(bool queue, SteadyTime now) {
  wait_.timer_at.reset();
  wait_.retry_at.reset();
  const bool first = !wait_.sent_ask;
  wait_.sent_ask = true;
  Step step{Step::Kind::ask, {}, queue, first};
  if (first && cfg_.sync.replicas > 0) step.sync = sync_for(now);  // a grant it gets is its own write
  return step;
}

// A grant not yet acknowledged by enough replicas: renewed and WAITed for,
// again and again, until acknowledged, lost, or the wait's deadline (at
// least once: a grant handed over at the deadline gets its WAIT). A wait
// without a deadline goes on while the grant is kept alive; a try
// (try_lock) WAITs once.
Step Claim::confirm_step(SteadyTime now, const WaitContext& ctx) {
  if (wait_.cancelled || ctx.stopped) return Step{Step::Kind::cancelled};
  // Once it had a WAIT, no other is sent that cannot be answered by the
  // deadline (its tick included): a WAIT cut at the deadline tells nothing.
  const bool over = !wait_.queue || (wait_.deadline && now + retry::kMinSyncWait + retry::kSyncTick > *wait_.deadline);
  if (over && wait_.confirms > 0) return Step{Step::Kind::not_replicated};
  if (now >= grant_.valid_until) {  // not renewed in time (a server down): nobody holds it
    lose_unconfirmed();
    return next(now, ctx);
  }
  if (wait_.retry_at && now < *wait_.retry_at) {
    return Step{Step::Kind::wait, wait_.deadline ? std::min(*wait_.retry_at, *wait_.deadline) : *wait_.retry_at};
  }
  wait_.retry_at.reset();
  ++wait_.confirms;
  Step step{Step::Kind::confirm};
  step.sync = sync_for(now);
  return step;
}

// One WAIT's timeout: sync_timeout, less if the wait's deadline is nearer
// (answered by the deadline: the server's tick comes after the timeout),
// never below kMinSyncWait (WAIT 0 blocks for ever).
milliseconds Claim::sync_for(SteadyTime now) const {
  milliseconds t = cfg_.sync.timeout;
  if (wait_.deadline) t = std::min(t, std::chrono::floor<milliseconds>(*wait_.deadline - now) - retry::kSyncTick);
  return std::max(t, retry::kMinSyncWait);
}

std::optional<SteadyTime> Claim::call_by(const Step& step, SteadyTime now) const {
  if (!wait_.deadline || step.sync.count() == 0) return wait_.deadline;
  const SteadyTime answered = now + step.sync + retry::kSyncTick;
  return std::min(std::max(*wait_.deadline, answered), *wait_.deadline + retry::kSyncPastDeadline);
}

SteadyTime Claim::leave_by(SteadyTime now) const {
  return (wait_.deadline ? std::min(now, *wait_.deadline) : now) + retry::kGiveUpGrace;
}

// The grant went (it expired, or could not be renewed) before replicas
// acknowledged it: nobody held it. The wait goes on as one whose entry
// expired, asking again (at the tail); a try ends busy.
void Claim::lose_unconfirmed() {
  grant_.lease_confirmed = false;
  if (!wait_.queue) {
    state_ = State::idle;
    wait_.outcome = Step::Kind::busy;
    return;
  }
  state_ = State::waiting;
  wait_.kicked = true;
  wait_.confirms = 0;  // a later grant gets its WAIT, even at the deadline
}

// A grant handed to us (PUBLISH or heartbeat) needs no round trip, if it is
// for our current place and still fresh.
std::optional<Step> Claim::take_signal(SteadyTime now, const WaitContext& ctx) {
  if (!wait_.signalled) return std::nullopt;
  wait_.signalled = false;
  const SteadyTime valid = grant_.lease_confirmed ? grant_.valid_until : wait_.refreshed_at + handoff_validity();
  if (wait_.signal_fence != wait_.ticket) {
    grant_.lease_confirmed = false;  // a grant of an earlier place we no longer hold: ignore
  } else if (valid <= now) {
    grant_.lease_confirmed = false;
    wait_.kicked = true;  // too late to trust it blindly: ask Redis
  } else {
    // The next heartbeat renews it once (beat_item). Written by another
    // call (a release's handoff): with sync_replicas, confirmed by our own.
    grant(wait_.signal_fence, valid, false);
    return next(now, ctx);
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

// A grant reported to this wait; unless `acknowledged` (or sync_replicas is
// off), it is confirmed first (confirm_step).
void Claim::grant(std::uint64_t fence, SteadyTime valid_until, bool acknowledged) {
  if (acknowledged || cfg_.sync.replicas == 0) {
    granted_with(fence, valid_until);
    return;
  }
  state_ = State::confirming;
  grant_.fence = fence;
  grant_.valid_until = valid_until;
}

Step Claim::granted_with(std::uint64_t fence, SteadyTime valid_until) {
  state_ = State::held;
  grant_.fence = fence;
  grant_.valid_until = valid_until;
  wait_.outcome = Step::Kind::granted;
  counters_.add(&Stats::grants);
  return Step{Step::Kind::granted};
}

SteadyTime Claim::wake_time(SteadyTime now, const WaitContext& ctx) const {
  SteadyTime at = wait_.deadline ? *wait_.deadline : now + std::chrono::hours(24);
  at = std::min(at, now + (ctx.signals ? steady_clock::duration(cfg_.liveness) : poll_interval(ctx.heartbeat_period)));
  if (wait_.position >= 0 && wait_.position < static_cast<long long>(cfg_.permits) && wait_.next_expiry_ms >= 0) {
    at = std::min(at, std::max(wait_.expiry_at, now + milliseconds(1)));  // a lease may run out
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
  long long behind = std::max(0LL, wait_.position - static_cast<long long>(cfg_.permits) + 1);
  milliseconds slow = milliseconds(10) * (std::min<long long>(behind, 100000) + 1);
  return std::min<steady_clock::duration>(slow, heartbeat_period);
}

// The earliest holder's deadline, `next_ms` after a call sent at `sent`
// (-1: no holder): a waiter within the permits wakes then, since a lease
// may run out without a release (or a handoff to a dead waiter expire).
void Claim::note_next_expiry(long long next_ms, SteadyTime sent) {
  wait_.next_expiry_ms = next_ms;
  wait_.expiry_at = sent + milliseconds(std::max(0LL, next_ms) + 2);
}

Effects Claim::on_acquired(const Acquired& reply, SteadyTime sent, int acks) {
  wait_.asked = true;
  wait_.backoff = retry::kFirstBackoff;
  wait_.failing_since.reset();
  Effects fx;
  switch (reply.status) {
    case Acquired::Status::granted:
      grant_.lease_confirmed = true;
      if (acks >= 0) ++wait_.confirms;
      grant(reply.fence, server_deadline(sent, reply.remaining_ms), acknowledged(acks));
      return fx;
    case Acquired::Status::busy:
      state_ = State::idle;
      wait_.outcome = Step::Kind::busy;
      return fx;
    case Acquired::Status::evicted: on_evicted(); return fx;
    case Acquired::Status::queued: break;
  }
  if (!wait_.counted) {
    wait_.counted = true;
    counters_.add(&Stats::waits);
  }
  wait_.ticket = reply.ticket;
  if (wait_.position != reply.position) fx.position = static_cast<std::size_t>(std::max(0LL, reply.position));
  wait_.position = reply.position;
  note_next_expiry(reply.next_expiry_ms, sent);
  wait_.refreshed_at = std::max(wait_.refreshed_at, sent);
  wait_.last_ok = sent;
  return fx;
}

bool Claim::on_ask_failed(SteadyTime sent, SteadyTime now, Failure failure) {
  if (!wait_.failing_since) wait_.failing_since = now;
  const bool at_deadline = wait_.deadline && now >= *wait_.deadline;
  // A queued wait whose call may have run ends at its deadline as any other:
  // it times out and leaves the queue (give_up), whatever the server does.
  const bool times_out = at_deadline && wait_.queue && failure != Failure::refused &&
                         (wait_.asked || wait_.maybe_queued || failure == Failure::in_doubt);
  if (!may_retry(sent, now, failure) && !times_out) return false;
  wait_.retry_at = at_deadline ? now : now + wait_.backoff;  // at the deadline: next() gives up at once
  wait_.backoff = std::min(wait_.backoff * 2, retry::kMaxBackoff);
  return true;
}

bool Claim::may_retry(SteadyTime sent, SteadyTime now, Failure failure) {
  switch (failure) {
    case Failure::refused: return false;
    case Failure::not_run:
      // Nothing ran, so a retry is safe, but a try must not wait, and a
      // cache flushed for a whole liveness period is a broken server.
      return wait_.queue && (wait_.deadline || now - *wait_.failing_since <= cfg_.liveness);
    case Failure::in_doubt:
      if (!wait_.asked && !wait_.maybe_queued) {
        // The first call may have queued us (a restart or a killed
        // connection in flight): retry as a queued waiter does, with the
        // same member, which finds its entry if it is there. A try ends:
        // the blocking driver leaves, releasing what it may have been
        // granted; the async one lets it run out (see fail_async).
        if (!wait_.queue) return false;
        wait_.maybe_queued = true;
        wait_.last_ok = now;        // retries run for a liveness from here,
        wait_.refreshed_at = sent;  // and that entry lives until sent + liveness at least (a grant's validity)
      }
      break;
    case Failure::unsent:
      // A server down from the start is reported at once.
      if (!wait_.asked && !wait_.maybe_queued) return false;
      break;
    case Failure::down:
      // A server that went away under a running client (a restart) is
      // ridden out by a wait, from its first ask on, as not_run is; a try ends.
      if (!wait_.queue) return false;
      if (!wait_.asked && !wait_.maybe_queued) return wait_.deadline || now - *wait_.failing_since <= cfg_.liveness;
      break;
  }
  // A timed wait retries until its deadline, then times out as any other
  // (an entry that expired meanwhile is queued again at the tail). An
  // untimed one retries until its entry would have expired unless this
  // process's other waiters on the name keep its liveness (docs/PROTOCOL.md
  // §2); then the wait fails, and leaving cancels the entry (or abandons
  // it, §7).
  if (wait_.deadline) return true;
  return now - std::max(wait_.last_ok, wait_.refreshed_at) <= cfg_.liveness;
}

void Claim::on_gave_up(const CancelResult& reply, SteadyTime sent) {
  if (reply.status == CancelResult::Status::granted) {
    // Granted while we were giving up (a handoff, or a call of ours that
    // ran late): keep it, for exactly as long as the server says.
    grant_.lease_confirmed = true;
    grant(reply.fence, server_deadline(sent, reply.remaining_ms), false);
    return;
  }
  state_ = State::idle;
  wait_.outcome = Step::Kind::timed_out;
  counters_.add(&Stats::timeouts);
}

void Claim::on_confirmed(const BeatResult& result, int acks, SteadyTime sent) {
  if (state_ != State::confirming) return;
  wait_.backoff = retry::kFirstBackoff;
  if (result.status == BeatResult::Status::holding && static_cast<std::uint64_t>(result.value) == grant_.fence) {
    grant_.lease_confirmed = true;
    const SteadyTime valid = server_deadline(sent, result.ms);
    // Acknowledged, it is believed valid until this renewal's deadline,
    // which the WAIT covered: not a later one the heartbeat may have seen.
    if (acknowledged(acks)) {
      granted_with(grant_.fence, valid);
    } else {
      grant_.valid_until = std::max(grant_.valid_until, valid);  // alive: WAIT again
    }
    return;
  }
  if (result.status == BeatResult::Status::evicted) {
    state_ = State::waiting;
    on_evicted();
    return;
  }
  lose_unconfirmed();
}

void Claim::on_confirm_failed(SteadyTime now) {
  wait_.retry_at = now + wait_.backoff;
  wait_.backoff = std::min(wait_.backoff * 2, retry::kMaxBackoff);
}

void Claim::finish_not_replicated() {
  state_ = State::idle;
  wait_.outcome = Step::Kind::not_replicated;
}

void Claim::finish_cancelled() {
  state_ = State::idle;
  wait_.outcome = Step::Kind::cancelled;
  counters_.add(&Stats::cancels);
}

// Evicted, the member is in no queue and never joins one again: the wait
// ends (docs/PROTOCOL.md, evict), where an expired entry would queue anew.
void Claim::on_evicted() {
  if (state_ != State::waiting) return;
  state_ = State::idle;
  wait_.outcome = Step::Kind::evicted;
}

void Claim::abort() {
  state_ = State::idle;
  wait_.outcome = Step::Kind::cancelled;
}

}  // namespace fairlock::detail
