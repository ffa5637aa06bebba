// The blocking driver (api/blocking_wait.h): a claim's steps on the
// caller's thread.
#include "api/blocking_wait.h"

#include <exception>
#include <utility>

#include "api/client_impl.h"
#include "api/name_watch.h"
#include "fairlock/errors.h"
#include "net/call_deadline.h"
#include "node/failure.h"
#include "node/router.h"
#include "node/server_calls.h"

namespace fairlock::detail {

using std::chrono::steady_clock;

bool BlockingWait::acquire(std::optional<SteadyTime> deadline, bool queue) {
  client_->check_running();
  // Keep ourselves alive for the whole wait: the owning object may be
  // destroyed or moved from another thread, which cancels this wait.
  const auto self = shared_from_this();
  const std::string member = start_wait(deadline, queue);
  struct Unwatch {
    NameWatch watch;
    const std::string& name;
    explicit Unwatch(const std::string& n) : name(n) {}  // C++20: no aggregate
    Unwatch(const Unwatch&) = delete;
    Unwatch& operator=(const Unwatch&) = delete;
    ~Unwatch() { watch.stop(name); }
  } unwatch{name_};
  // Per-name signals (keyspace, a cluster's shard channels): a wait on a
  // name subscribed already (kept from an earlier wait) watches it at once;
  // on another, once its first call queued it, not before: a grant at once
  // costs no subscription (an uncontended lock() of a fresh name on a
  // cluster took 693 us with it, against 146 us for try_lock()).
  if (queue && signalled_per_name(node().wake)) {
    if (!node().wake.watching(name_)) return drive(member, unwatch.watch, deadline);
    watch_within(unwatch.watch, deadline);
  }
  return drive(member, unwatch.watch);
}

// Subscribes to the name's wake channel, waiting for the confirmation no
// longer than the wait's deadline (a stopped server never confirms): the
// wait polls until it is confirmed.
void BlockingWait::watch_within(NameWatch& watch, std::optional<SteadyTime> deadline) {
  const CallDeadline bound(deadline);
  watch.start(node().wake, name_, true, &cancel_requested_);
}

// The first time a queued wait would sleep: it subscribes to its name's channel
// (waiting for the confirmation within its deadline, or until cancelled),
// then asks once more, so that a grant signalled before the subscription
// was confirmed is not waited for. Called locked, returns locked.
void BlockingWait::watch_queued(std::unique_lock<std::mutex>& lk, NameWatch& watch,
                                std::optional<SteadyTime> deadline) {
  lk.unlock();
  watch_within(watch, deadline);
  lk.lock();
  claim_.kick();
}

// Runs the claim's steps until the wait ends. Every way out either holds
// the grant or has left the queue.
bool BlockingWait::drive(const std::string& member, NameWatch& watch,
                         std::optional<std::optional<SteadyTime>> watch_deadline) {
  std::unique_lock<std::mutex> lk(mu_);
  try {
    for (;;) {
      const Step step = claim_.next(steady_clock::now(), wait_context(watch));
      switch (step.kind) {
        case Step::Kind::ask: ask(lk, member, step); break;
        case Step::Kind::wait:
          if (watch_deadline && claim_.waiting_ticket()) {  // queued (not a retry's backoff, not confirming)
            watch_queued(lk, watch, *std::exchange(watch_deadline, std::nullopt));
            break;
          }
          cv_.wait_until(lk, step.until);
          break;
        case Step::Kind::give_up: give_up(lk, member); break;
        case Step::Kind::confirm: confirm(lk, member, step); break;
        case Step::Kind::granted: return finish_granted(lk);
        case Step::Kind::not_replicated: {
          const SteadyTime until = claim_.leave_by(steady_clock::now());
          claim_.finish_not_replicated();
          lk.unlock();
          leave_within(member, until);  // releases the grant it finds
          throw not_replicated();
        }
        case Step::Kind::timed_out:
        case Step::Kind::busy:
          lk.unlock();
          client_->session().delist(member);
          return false;
        case Step::Kind::cancelled: {
          const SteadyTime until = claim_.leave_by(steady_clock::now());
          claim_.finish_cancelled();
          lk.unlock();
          leave_within(member, until);  // a stalled server must not hold the caller
          throw wait_cancelled();
        }
        case Step::Kind::evicted:  // in no queue: nothing to leave
          lk.unlock();
          client_->session().delist(member);
          throw wait_evicted();
      }
    }
  } catch (...) {
    if (!lk.owns_lock()) lk.lock();
    fail_wait(lk, member);
    rethrow_public(std::current_exception());
  }
}

// Runs `call` unlocked, bounded by Claim::call_by (a stalled server never
// holds us past it, or past a cancel); returns how it failed, if it did.
// Called locked, returns locked.
template <class Call>
std::exception_ptr BlockingWait::call_unlocked(std::unique_lock<std::mutex>& lk, const Step& step, Call call) {
  calls_->begin(claim_.call_by(step, steady_clock::now()));
  lk.unlock();
  std::exception_ptr error;
  {
    const MovableDeadline::Calls calls(*calls_);  // ends the series however the call ends
    try {
      call();
    } catch (const Error&) {
      error = std::current_exception();
    }
  }
  lk.lock();
  return error;
}

void BlockingWait::ask(std::unique_lock<std::mutex>& lk, const std::string& member, const Step& step) {
  const SteadyTime sent = steady_clock::now();
  Acquired reply;
  int acks = -1;
  std::exception_ptr error;
  if (step.sync.count() == 0) {
    error = call_unlocked(lk, step, [&] { reply = detail::acquire(node().server, keys_, acquire_args(member, step)); });
  } else {
    const SyncWait sync = claim_.sync_wait(step);
    error = call_unlocked(lk, step, [&] {
      Synced<Acquired> r = detail::acquire(node().server, keys_, acquire_args(member, step), sync);
      reply = r.reply;
      acks = r.acks;
    });
  }
  settle_ask(lk, reply, error, sent, acks);
}

void BlockingWait::confirm(std::unique_lock<std::mutex>& lk, const std::string& member, const Step& step) {
  const SteadyTime sent = steady_clock::now();
  const SyncWait sync = claim_.sync_wait(step);
  Synced<BeatResult> reply;
  const std::exception_ptr error =
      call_unlocked(lk, step, [&] { reply = detail::confirm(node().server, confirm_call_of(member), sync); });
  settle_confirm(lk, reply.reply, reply.acks, error, sent);
}

bool BlockingWait::finish_granted(std::unique_lock<std::mutex>& lk) {
  if (!client_->stopped()) return true;
  lk.unlock();
  abandon();
  throw Cancelled("fairlock: client is shut down");
}

}  // namespace fairlock::detail
