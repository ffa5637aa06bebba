// The shared core of a claim (api/claim_core.h): its setup, the script
// calls' arguments, the settling of their replies for both drivers, and
// what the drivers' waits are told when they end with an error.
#include "api/claim_core.h"

#include <spdlog/spdlog.h>

#include <exception>
#include <utility>

#include "api/client_impl.h"
#include "api/name_watch.h"
#include "fairlock/errors.h"
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

ClaimCore::ClaimCore(std::shared_ptr<ClientImpl> client, std::string name, std::uint32_t permits, LockOptions opts)
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

Node& ClaimCore::node() const { return client_->router().for_keys(keys_); }

// Grants to this client are signalled per name on `wake` (keyspace mode,
// or sharded publish): a wait watches its name.
bool ClaimCore::signalled_per_name(const Wake& wake) const {
  const Notify mode = client_->mode();
  return mode == Notify::keyspace || (mode == Notify::publish && wake.sharded());
}

// Whether the wait may sleep on signals follows the subscriptions as they
// are now: the name's own (keyspace, sharded) may be refused or lost during
// the wait, and the name may move to another node (the watch follows it).
WaitContext ClaimCore::wait_context(NameWatch& watch) const {
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

ScriptCall ClaimCore::confirm_call_of(const std::string& member) const {
  return confirm_call(keys_, permits_, member, opts_.lease, client_->options().liveness_ttl);
}

// The confirm call sent at `sent` came back, or failed with `error`: a
// failure a retry may cure is retried (the claim's backoff), until the
// wait's deadline; any other ends the wait (thrown: the caller leaves,
// releasing the grant).
void ClaimCore::settle_confirm(std::unique_lock<std::mutex>& /*locked*/, const BeatResult& result, int acks,
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

NotReplicatedError ClaimCore::not_replicated() const {
  return NotReplicatedError("fairlock: " + name_ + ": the grant was not acknowledged by " +
                            std::to_string(client_->options().sync_replicas) +
                            " replica(s) before the deadline (Options::sync_replicas); it was released");
}

AcquireArgs ClaimCore::acquire_args(const std::string& member, const Step& step) const {
  return AcquireArgs{member, permits_, opts_.lease, client_->options().liveness_ttl, step.queue, step.first};
}

// The acquire call sent at `sent` came back, or failed with `error`: the
// claim takes it in, or it ends the wait (thrown: the caller leaves).
void ClaimCore::settle_ask(std::unique_lock<std::mutex>& lk, const Acquired& reply, const std::exception_ptr& error,
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

Cancelled ClaimCore::wait_cancelled() const { return Cancelled("fairlock: wait for " + name_ + " cancelled"); }

EvictedError ClaimCore::wait_evicted() const {
  return EvictedError("fairlock: wait for " + name_ + " ended: an operator evicted it (Client::evict)");
}

bool ClaimCore::owns() const noexcept {
  std::lock_guard<std::mutex> lk(mu_);
  return claim_.owns(steady_clock::now());
}

std::uint64_t ClaimCore::fence() const noexcept {
  std::lock_guard<std::mutex> lk(mu_);
  return claim_.fence();
}

}  // namespace fairlock::detail
