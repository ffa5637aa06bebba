// The asynchronous driver (api/async_wait.h): the same Claim steps as the
// blocking driver, run by the client's async thread (AsyncDriver), their
// script calls batched with other waiters'. Replies are settled by the
// core's code; every way out runs the callback exactly once.
#include "api/async_wait.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <utility>

#include "api/client_impl.h"
#include "base/retry_policy.h"
#include "fairlock/errors.h"
#include "node/failure.h"
#include "node/router.h"
#include "node/script_batch.h"

namespace fairlock::detail {

using std::chrono::steady_clock;

std::uint64_t AsyncWait::begin_async(const std::string& member, std::optional<SteadyTime> deadline, bool queue,
                                     AcquireCallback done) {
  NameWatch watch;
  if (queue && signalled_per_name(node().wake)) watch.start(node().wake, name_, false);  // polls until confirmed
  std::uint64_t id = 0;
  {
    std::lock_guard<std::mutex> lk(mu_);
    id = ++waits_;
    // Its rounds end by the deadline and the grace, WAIT or not: a WAIT is
    // timed to be answered by the deadline (Claim::call_by).
    async_ = Wait{std::move(done), id, watch, deadline};
    // Under the lock: a cancel or an end now untracks what was tracked.
    if (deadline) client_->async().track_deadline(*deadline);
  }
  if (!client_->async().schedule(shared_as(this))) {  // the client shut down meanwhile
    std::unique_lock<std::mutex> lk(mu_);
    // Unless the async thread saw this wait after all (and so ends it):
    if (async_ && async_->id == id) {
      async_->watch.stop(name_);
      end_async(lk);
      fail_wait(lk, member);
      throw Error("fairlock: the client is shut down");
    }
  }
  return id;
}

void AsyncWait::cancel_wait(std::uint64_t wait) noexcept {
  std::lock_guard<std::mutex> lk(mu_);
  if (async_ && async_->id == wait && claim_.cancel()) end_soon();
}

void AsyncWait::release_async(std::function<void(Released)> done) {
  client_->async().post([self = shared_as(this), done = std::move(done)] {
    const Released r = self->release();
    if (done) self->client_->async().deliver([done, r] { done(r); });
  });
}

// One look at the wait, on the async thread.
std::optional<SteadyTime> AsyncWait::advance(SteadyTime /*round_start*/, ScriptBatch& batch) {
  // Now, not when the round began: callbacks run inline may have taken long.
  const SteadyTime now = steady_clock::now();
  std::unique_lock<std::mutex> lk(mu_);
  if (!async_) return std::nullopt;  // ended already
  const std::string member = claim_.member();
  try {
    Step step = claim_.next(now, wait_context(async_->watch));
    if (overdue(step, now)) {
      // Past the deadline and the grace a call would get (this thread was
      // busy): it times out now, without a call; a queued one leaves in
      // the background (one never asked has nothing to leave).
      if (step.kind == Step::Kind::give_up) leave_later(member);
      claim_.on_gave_up(CancelResult{}, now);
      step = claim_.next(now, wait_context(async_->watch));
    }
    switch (step.kind) {
      case Step::Kind::ask: send_ask(batch, member, step, now); break;
      case Step::Kind::confirm: send_confirm(batch, member, step, now); break;
      case Step::Kind::wait: return step.until;
      case Step::Kind::give_up: send_give_up(batch, member, now); break;
      case Step::Kind::granted:
        if (client_->stopped() || abandoned_) {  // granted as the client or the object goes away: give it back
          finish_async(lk, AcquireResult::failed_with(std::make_exception_ptr(Cancelled(
                               "fairlock: wait for " + name_ + " cancelled (its object or client went away)"))));
          lk.unlock();
          abandon();
          break;
        }
        finish_async(lk, AcquireResult::granted_with(claim_.fence()));
        break;
      case Step::Kind::timed_out:
      case Step::Kind::busy: {
        const bool busy = step.kind == Step::Kind::busy;
        client_->session().delist(member);
        finish_async(lk, AcquireResult::failed_with(std::make_exception_ptr(
                             TimeoutError("fairlock: " + name_ + (busy ? " is busy" : ": wait timed out")))));
        break;
      }
      case Step::Kind::evicted:  // in no queue: nothing to leave
        client_->session().delist(member);
        finish_async(lk, AcquireResult::failed_with(std::make_exception_ptr(wait_evicted())));
        break;
      case Step::Kind::cancelled:
      case Step::Kind::not_replicated: leave_async(lk, batch, member, step.kind, now); break;
    }
  } catch (...) {
    if (!lk.owns_lock()) lk.lock();
    fail_async(lk, std::current_exception());
  }
  return std::nullopt;
}

// The wait ends cancelled, or with a grant not acknowledged in time
// (released by leaving): the callback runs once the queue is left, which
// the grace from now, or from the deadline if that came first, bounds (a
// stalled server; Claim::leave_by): tracked until then; at shutdown, the
// shutdown's own bound (leaves_soon).
void AsyncWait::leave_async(std::unique_lock<std::mutex>& lk, ScriptBatch& batch, const std::string& member,
                            Step::Kind why, SteadyTime now) {
  const bool cancelled = why == Step::Kind::cancelled;
  if (cancelled) {
    claim_.finish_cancelled();
  } else {
    claim_.finish_not_replicated();
  }
  if (leaves_soon()) {
    bound_async_rounds(claim_.leave_by(now) - retry::kGiveUpGrace);
  } else {
    unbound_async_rounds();
  }
  send_leave(batch, member, end_async(lk, false),
             cancelled ? std::make_exception_ptr(wait_cancelled()) : std::make_exception_ptr(not_replicated()));
}

void AsyncWait::send_ask(ScriptBatch& batch, const std::string& member, const Step& step, SteadyTime now) {
  if (step.sync.count() > 0) {
    batch.add_synced(
        node().server, acquire_call(keys_, acquire_args(member, step)), claim_.sync_wait(step),
        [self = shared_as(this), member, now](const redisReply* reply, int acks, const std::exception_ptr& error) {
          self->on_ask_reply(member, reply, error, now, acks);
        });
    return;
  }
  batch.add(node().server, acquire_call(keys_, acquire_args(member, step)),
            [self = shared_as(this), member, now](const redisReply* reply, const std::exception_ptr& error) {
              self->on_ask_reply(member, reply, error, now);
            });
}

void AsyncWait::send_confirm(ScriptBatch& batch, const std::string& member, const Step& step, SteadyTime now) {
  batch.add_synced(node().server, confirm_call_of(member), claim_.sync_wait(step),
                   [self = shared_as(this), member, now](const redisReply* reply, int acks, std::exception_ptr error) {
                     BeatResult result;
                     try {
                       if (!error) result = parse_confirmed(*reply);
                     } catch (...) {
                       error = std::current_exception();
                     }
                     self->take_reply(member, [&](std::unique_lock<std::mutex>& lk) {
                       self->settle_confirm(lk, result, acks, error, now);
                     });
                   });
}

void AsyncWait::on_ask_reply(const std::string& member, const redisReply* reply, std::exception_ptr error,
                             SteadyTime sent, int acks) {
  Acquired parsed;
  if (!error) {
    try {
      parsed = parse_acquired(*reply);
    } catch (...) {
      error = std::current_exception();
    }
  }
  const bool taken =
      take_reply(member, [&](std::unique_lock<std::mutex>& lk) { settle_ask(lk, parsed, error, sent, acks); });
  if (taken || error || parsed.status != Acquired::Status::granted) return;
  // The wait ended while the call was out. Granted by a signal meanwhile,
  // the grant is ours; otherwise (its deadline, a cancel) it is nobody's,
  // and goes back at once.
  std::unique_lock<std::mutex> lk(mu_);
  if (claim_.holds(member)) return;
  lk.unlock();
  leave_later(member);
}

// The deadline passed: the cancel rides in the batch, whose round the
// wait's own deadline bounds (AsyncDriver::track_deadline). If the server
// does not answer in that time, the wait times out all the same and leaving
// is settled in the background.
void AsyncWait::send_give_up(ScriptBatch& batch, const std::string& member, SteadyTime sent) {
  batch.add(node().server, cancel_call(keys_, member, permits_),
            [self = shared_as(this), member, sent](const redisReply* reply, const std::exception_ptr& error) {
              self->take_reply(member, [&](std::unique_lock<std::mutex>& /*locked*/) {
                CancelResult left;
                if (error) {
                  self->leave_later(member);
                } else {
                  left = parse_cancelled(*reply);
                }
                self->claim_.on_gave_up(left, sent);
              });
            });
}

// A step that would send a call for a wait past its deadline and grace.
bool AsyncWait::overdue(const Step& step, SteadyTime now) const {
  const bool calls = step.kind == Step::Kind::give_up || step.kind == Step::Kind::ask;
  return calls && claim_.deadline() && now >= *claim_.deadline() + retry::kGiveUpGrace;
}

// The rounds of calls this wait's calls go in end by `at` + the grace
// (AsyncDriver::track_deadline), instead of by its own deadline. Called
// locked, with an async wait in progress.
void AsyncWait::bound_async_rounds(SteadyTime at) {
  if (async_->deadline) client_->async().untrack_deadline(*async_->deadline);
  async_->deadline = at;
  client_->async().track_deadline(at);
}

// The rounds of calls this wait's calls go in are no longer bounded by it
// (at shutdown, which bounds them all). Called locked, with an async wait
// in progress.
void AsyncWait::unbound_async_rounds() {
  if (async_->deadline) client_->async().untrack_deadline(*async_->deadline);
  async_->deadline.reset();
}

// A cancelled async wait's leave bounds the rounds of calls that carry it
// (now + kGiveUpGrace): its callback comes soon, whatever the server does.
// Not at shutdown: the leaves of every wait left go out together then, and
// one grace for thousands of calls cut most of them on a slow host (3,000
// async waits at shutdown left 68 to 2,584 queued under TSan, two runs at
// once on 2 cores); the shutdown bounds them all by one command_timeout
// (ClientImpl::shutdown), and a wait's own deadline, moot now, no longer
// bounds them (unbound_async_rounds).
bool AsyncWait::leaves_soon() const { return !client_->stopped(); }

// A reply to the wait of `member`, if it is still in progress (false
// otherwise: a later wait of the object never takes an earlier one's
// reply): `take_in` gives it to the claim (called locked), then the wait is
// looked at again; what it throws ends the wait.
bool AsyncWait::take_reply(const std::string& member,
                           const std::function<void(std::unique_lock<std::mutex>&)>& take_in) {
  std::unique_lock<std::mutex> lk(mu_);
  if (!async_ || claim_.member() != member) return false;
  try {
    take_in(lk);
    client_->async().schedule(shared_as(this));
  } catch (...) {
    if (!lk.owns_lock()) lk.lock();
    fail_async(lk, std::current_exception());
  }
  return true;
}

// leave() for the async thread: the cancel call rides in the batch; the
// callback gets `outcome` (Cancelled, NotReplicatedError) once it has run,
// as a blocking lock() throws it after leaving.
void AsyncWait::send_leave(ScriptBatch& batch, const std::string& member, Wait wait, std::exception_ptr outcome) {
  client_->session().delist(member);
  batch.add(node().server, cancel_call(keys_, member, permits_),
            [self = shared_as(this), member, wait = std::move(wait), outcome = std::move(outcome)](
                const redisReply* reply, const std::exception_ptr& error) mutable {
              self->settle_leave(
                  member,
                  [&] {
                    if (error) std::rethrow_exception(error);
                    return parse_cancelled(*reply);
                  },
                  [&] { self->leave_later(member); });
              if (wait.deadline) self->client_->async().untrack_deadline(*wait.deadline);
              self->deliver(std::move(wait), AcquireResult::failed_with(outcome));
            });
}

// The wait is over: the callback runs (unlocked, through the executor).
// Called locked, returns locked.
void AsyncWait::finish_async(std::unique_lock<std::mutex>& lk, const AcquireResult& result) {
  Wait wait = end_async(lk);
  lk.unlock();
  deliver(std::move(wait), result);
  lk.lock();
}

// Takes the wait out (a later wait of the object may begin at once), and
// its deadline with it unless `untrack` is false (the caller untracks it).
AsyncWait::Wait AsyncWait::end_async(std::unique_lock<std::mutex>& /*locked*/, bool untrack) {
  Wait wait = std::move(*async_);
  async_.reset();
  if (untrack && wait.deadline) client_->async().untrack_deadline(*wait.deadline);
  return wait;
}

void AsyncWait::deliver(Wait wait, const AcquireResult& result) {
  wait.watch.stop(name_);
  client_->async().deliver([done = std::move(wait.done), result] { done(result); });
}

namespace {
// The server answered (node/failure.h): leaving the queue is one quick
// call. Otherwise it may be unreachable or stalled, and the async thread
// must not wait on it once per waiter: the entry is abandoned (see
// Leaving::settle_leave). A call its cancel cut short is in doubt.
bool answered(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return server_answered(failure_of(e));
  } catch (...) {
    return false;
  }
}
}  // namespace

// The wait ends with an error. Called locked, returns locked.
void AsyncWait::fail_async(std::unique_lock<std::mutex>& lk, const std::exception_ptr& error) {
  if (!async_) return;
  Wait wait = end_async(lk);
  const std::string member = claim_.member();
  fail_wait(lk, member, answered(error));  // as the blocking driver, but never waits on a dead server
  deliver(std::move(wait), AcquireResult::failed_with(public_error(error)));
  lk.lock();
}

}  // namespace fairlock::detail
