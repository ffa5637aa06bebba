#include "api/participant.h"

#include <spdlog/spdlog.h>

#include <exception>
#include <stdexcept>
#include <utility>

#include "api/client_impl.h"
#include "api/release_retry.h"
#include "base/retry_policy.h"
#include "fairlock/errors.h"
#include "net/call_deadline.h"
#include "node/failure.h"
#include "node/router.h"
#include "node/server_calls.h"
#include "protocol/formats.h"

namespace fairlock::detail {

using std::chrono::steady_clock;

namespace {

// The claim's word for how an acquire call failed (node/failure.h), on a
// server this client has `reached` before or not.
Claim::Failure claim_failure(CallFailure f, bool reached) {
  switch (f) {
    case CallFailure::unsent: return reached ? Claim::Failure::down : Claim::Failure::unsent;
    case CallFailure::not_run: return Claim::Failure::not_run;
    case CallFailure::in_doubt: return Claim::Failure::in_doubt;
    case CallFailure::refused:
    case CallFailure::wrong_setup: break;
  }
  return Claim::Failure::refused;
}

// What a grant needs before it is the caller's (Options::sync_replicas):
// the PUBLISH of the tail only where it replicates (node/sync_wait.h).
SyncWait sync_of(const Options& o, const Router& router) {
  if (o.sync_replicas == 0) return SyncWait{};
  return SyncWait{o.sync_replicas, o.sync_timeout,
                  router.publish_replicates() ? wake_channel(o.key_prefix, "sync") : std::string()};
}

}  // namespace

Participant::Participant(std::shared_ptr<ClientImpl> client, std::string name, std::uint32_t permits, LockOptions opts)
    : client_(std::move(client)),
      name_(std::move(name)),
      permits_(permits),
      opts_(std::move(opts)),
      keys_(client_->options().key_prefix, name_),
      claim_(ClaimConfig{permits_, opts_.lease, client_->options().liveness_ttl, opts_.auto_renew,
                         sync_of(client_->options(), client_->router())},
             client_->counters()) {
  if (permits_ < 1) throw BadOption("permits", "must be at least 1");
  if (permits_ > limits::kMaxPermits) throw BadOption("permits", "at most 1000000");
  if (opts_.lease.count() <= 0) throw BadOption("LockOptions::lease", "must be positive");
  if (opts_.lease < limits::kMinLease) {
    throw BadOption("LockOptions::lease", "at least " + std::to_string(limits::kMinLease.count()) +
                                              " ms (the heartbeat renews a grant every third of its lease, at most "
                                              "every 10 ms plus a round trip: a shorter lease is lost before it can "
                                              "be renewed)");
  }
  if (opts_.lease > limits::kMaxDuration) throw BadOption("LockOptions::lease", "at most 2147483647 ms");
  client_->check_running();
}

Node& Participant::node() const { return client_->router().for_keys(keys_); }

// ---------------------------------------------------------------- the blocking driver

bool Participant::acquire(std::optional<SteadyTime> deadline, bool queue) {
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

// Grants to this client are signalled per name on `wake` (keyspace mode,
// or sharded publish): a wait watches its name.
bool Participant::signalled_per_name(const Wake& wake) const {
  const Notify mode = client_->mode();
  return mode == Notify::keyspace || (mode == Notify::publish && wake.sharded());
}

// Subscribes to the name's wake channel, waiting for the confirmation no
// longer than the wait's deadline (a stopped server never confirms): the
// wait polls until it is confirmed.
void Participant::watch_within(NameWatch& watch, std::optional<SteadyTime> deadline) {
  const CallDeadline bound(deadline);
  watch.start(node().wake, name_, true, &cancel_requested_);
}

std::string Participant::start_wait(std::optional<SteadyTime> deadline, bool queue) {
  std::string member = new_member(client_->mode(), client_->id(), opts_.lease, node().wake.sharded());
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (async_) throw std::logic_error("fairlock: " + name_ + " is already waiting asynchronously");
    claim_.begin(member, queue, deadline, name_);
    cancel_requested_ = false;
  }
  client_->session().enlist(member, shared_from_this(), opts_.lease);
  return member;
}

// The first time a queued wait would sleep: it subscribes to its name's channel
// (waiting for the confirmation within its deadline, or until cancelled),
// then asks once more, so that a grant signalled before the subscription
// was confirmed is not waited for. Called locked, returns locked.
void Participant::watch_queued(std::unique_lock<std::mutex>& lk, NameWatch& watch, std::optional<SteadyTime> deadline) {
  lk.unlock();
  watch_within(watch, deadline);
  lk.lock();
  claim_.kick();
}

// Runs the claim's steps until the wait ends. Every way out either holds
// the grant or has left the queue.
bool Participant::drive(const std::string& member, NameWatch& watch,
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

// A wait ends with an error: if it still queues, it leaves (best effort,
// whatever went wrong), with a cancel call unless `call_server` is false
// (then its entry goes as an abandoned one: see settle_leave). Called locked,
// returns unlocked.
void Participant::fail_wait(std::unique_lock<std::mutex>& lk, const std::string& member, bool call_server) noexcept {
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

// Whether the wait may sleep on signals follows the subscriptions as they
// are now: the name's own (keyspace, sharded) may be refused or lost during
// the wait, and the name may move to another node (the watch follows it).
WaitContext Participant::wait_context(NameWatch& watch) const {
  Wake& wake = node().wake;
  bool signals = wake.signals_ok();
  if (signalled_per_name(wake)) {
    watch.follow(wake, name_);
    signals = signals && watch.confirmed(wake, name_);
  } else {
    signals = signals && client_->mode() == Notify::publish;
  }
  return WaitContext{client_->stopped(), signals, client_->session().heartbeat_period()};
}

// Runs `call` unlocked, bounded by Claim::call_by (a stalled server never
// holds us past it, or past a cancel); returns how it failed, if it did.
// Called locked, returns locked.
template <class Call>
std::exception_ptr Participant::call_unlocked(std::unique_lock<std::mutex>& lk, const Step& step, Call call) {
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

void Participant::ask(std::unique_lock<std::mutex>& lk, const std::string& member, const Step& step) {
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

void Participant::confirm(std::unique_lock<std::mutex>& lk, const std::string& member, const Step& step) {
  const SteadyTime sent = steady_clock::now();
  const SyncWait sync = claim_.sync_wait(step);
  Synced<BeatResult> reply;
  const std::exception_ptr error =
      call_unlocked(lk, step, [&] { reply = detail::confirm(node().server, confirm_call_of(member), sync); });
  settle_confirm(lk, reply.reply, reply.acks, error, sent);
}

ScriptCall Participant::confirm_call_of(const std::string& member) const {
  return confirm_call(keys_, permits_, member, opts_.lease, client_->options().liveness_ttl);
}

// The confirm call sent at `sent` came back, or failed with `error`: a
// failure a retry may cure is retried (the claim's backoff), until the
// wait's deadline; any other ends the wait (thrown: the caller leaves,
// releasing the grant).
void Participant::settle_confirm(std::unique_lock<std::mutex>& /*locked*/, const BeatResult& result, int acks,
                                 const std::exception_ptr& error, SteadyTime sent) {
  if (!error) {
    claim_.on_confirmed(result, acks, sent);
    return;
  }
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    if (is_final(failure_of(e))) throw;
    client_->log().debug("fairlock: confirming the grant of {} failed, retrying: {}", name_, e.what());
    claim_.on_confirm_failed(steady_clock::now());
  }
}

NotReplicatedError Participant::not_replicated() const {
  return NotReplicatedError("fairlock: " + name_ + ": the grant was not acknowledged by " +
                            std::to_string(client_->options().sync_replicas) +
                            " replica(s) before the deadline (Options::sync_replicas); it was released");
}

AcquireArgs Participant::acquire_args(const std::string& member, const Step& step) const {
  return AcquireArgs{member, permits_, opts_.lease, client_->options().liveness_ttl, step.queue, step.first};
}

// The acquire call sent at `sent` came back, or failed with `error`: the
// claim takes it in, or it ends the wait (thrown: the caller leaves).
void Participant::settle_ask(std::unique_lock<std::mutex>& lk, const Acquired& reply, const std::exception_ptr& error,
                             SteadyTime sent, int acks) {
  if (!error) {
    const std::uint64_t ticket = reply.status == Acquired::Status::queued ? reply.ticket : reply.fence;
    if (ticket > 0) client_->session().learned(name_, ticket);  // the heartbeat's floor
    apply(lk, claim_.on_acquired(reply, sent, acks));
    return;
  }
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    const CallFailure kind = failure_of(e);
    if (is_final(kind)) throw;
    const Claim::Failure failure = claim_failure(kind, node().server.reached());
    if (!claim_.on_ask_failed(sent, steady_clock::now(), failure)) {
      if (claim_.cancel_requested()) throw wait_cancelled();  // a try cut short by its cancel
      throw;
    }
    if (failure == Claim::Failure::not_run) {
      client_->log().warn("fairlock: acquire of {}: {}; retrying", name_, e.what());
    } else {
      client_->log().debug("fairlock: acquire of {} failed, retrying: {}", name_, e.what());
    }
  }
}

bool Participant::finish_granted(std::unique_lock<std::mutex>& lk) {
  if (!client_->stopped()) return true;
  lk.unlock();
  abandon();
  throw Cancelled("fairlock: client is shut down");
}

// ---------------------------------------------------------------- release

Cancelled Participant::wait_cancelled() const { return Cancelled("fairlock: wait for " + name_ + " cancelled"); }

EvictedError Participant::wait_evicted() const {
  return EvictedError("fairlock: wait for " + name_ + " ended: an operator evicted it (Client::evict)");
}

Released Participant::release() noexcept {
  ReleasePlan plan;
  {
    std::lock_guard<std::mutex> lk(mu_);
    plan = claim_.begin_release();
  }
  if (plan.kind == ReleasePlan::Kind::not_held) return Released::not_held;
  client_->session().delist(plan.member);
  if (plan.kind == ReleasePlan::Kind::released_at_shutdown) return Released::lost;  // Client::shutdown released it
  return release_member(plan);
}

void Participant::unlock() noexcept {
  if (release() == Released::not_held) client_->log().warn("fairlock: unlock of {}: not held", name_);
}

Released Participant::release_member(const ReleasePlan& plan) noexcept {
  bool released = false;
  std::string unconfirmed;
  try {
    try {
      released = detail::release(node().server, keys_, plan.member, permits_, plan.queued_first);
    } catch (const ConnectionError& e) {
      // Once more on a fresh connection: the server may have closed ours
      // (restart, CLIENT KILL) just now. If this one finds nothing, the
      // first attempt may have run, or the grant was already lost: which,
      // nobody can tell, so it is reported lost, never released.
      client_->log().debug("fairlock: release of {} failed, retrying once: {}", name_, e.what());
      released = detail::release(node().server, keys_, plan.member, permits_, plan.queued_first);
      if (!released) unconfirmed = " (the first release attempt was cut off in transit: it may have run)";
    }
  } catch (const std::exception& e) {
    if (plan.lost_reason.empty()) {  // else it was lost before: reported below
      release_later(plan.member, plan.queued_first, e);
      return Released::failed;
    }
  }
  if (released) note_released(plan.member, plan.queued_first);
  if (released && plan.lost_reason.empty()) return Released::released;
  if (!plan.lost_reason.empty()) {  // reported when it was learned
    client_->log().warn("fairlock: lock {} lost: {}", name_, plan.lost_reason);
    return Released::lost;
  }
  client_->counters().add(&Stats::lost);
  report_lost("the grant was gone when unlock ran (lease expired or evicted)" + unconfirmed);
  return Released::lost;
}

void Participant::release_quietly(const std::string& member, bool queued_first) noexcept {
  try {
    if (detail::release(node().server, keys_, member, permits_, queued_first)) note_released(member, queued_first);
  } catch (const std::exception& e) {
    release_later(member, queued_first, e);
  }
}

// A release or a leave that ran: kept to be sent again if the master
// changes before a replica has it (api/recent_releases.h).
void Participant::note_released(const std::string& member, bool queued_first) noexcept {
  if (!client_->router().changes_master()) return;  // a standalone server: never sent again
  try {
    client_->recent_releases().note(ReleaseOf{name_, keys_, member, permits_, queued_first},
                                    steady_clock::now() + opts_.lease);
  } catch (const std::exception&) {  // no memory: a failover may then leave the grant to its lease
  }
}

// A release that failed: asked again in the background (api/release_retry.h)
// while the grant may live, unless asking again cannot help.
void Participant::release_later(const std::string& member, bool queued_first, const std::exception& error) noexcept {
  try {
    if (!is_final(failure_of(error)) &&
        ReleaseRetry::start(client_, ReleaseOf{name_, keys_, member, permits_, queued_first},
                            steady_clock::now() + opts_.lease)) {
      client_->log().warn("fairlock: release of {} failed ({}): asking again in the background", name_, error.what());
      return;
    }
  } catch (const std::exception&) {  // no memory for the retry: as if refused
  }
  client_->log().warn("fairlock: release of {} failed (it expires with its lease): {}", name_, error.what());
}

void Participant::cancel() noexcept {
  std::lock_guard<std::mutex> lk(mu_);
  if (claim_.cancel()) end_soon();
}

void Participant::abandon() noexcept {
  ReleasePlan plan;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (async_) {  // an asynchronous wait, perhaps granted but not yet delivered: it ends Cancelled
      abandoned_ = true;
      if (claim_.cancel()) {
        end_soon();
      } else {
        notify_waiter();
      }
      return;
    }
    if (claim_.cancel()) {  // another thread waits: make it leave
      end_soon();
      return;
    }
    plan = claim_.begin_release();
  }
  if (plan.kind == ReleasePlan::Kind::not_held) return;
  client_->session().delist(plan.member);
  if (plan.kind == ReleasePlan::Kind::release) release_quietly(plan.member, plan.queued_first);
}

bool Participant::owns() const noexcept {
  std::lock_guard<std::mutex> lk(mu_);
  return claim_.owns(steady_clock::now());
}

std::uint64_t Participant::fence() const noexcept {
  std::lock_guard<std::mutex> lk(mu_);
  return claim_.fence();
}

}  // namespace fairlock::detail
