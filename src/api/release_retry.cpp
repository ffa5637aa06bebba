#include "api/release_retry.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

#include "api/client_impl.h"
#include "base/retry_policy.h"
#include "node/failure.h"
#include "node/router.h"
#include "protocol/calls.h"

namespace fairlock::detail {

using std::chrono::steady_clock;

ReleaseRetry::ReleaseRetry(std::shared_ptr<ClientImpl> client, ReleaseOf release, SteadyTime give_up_at)
    : client_(std::move(client)),
      release_(std::move(release)),
      give_up_at_(give_up_at),
      backoff_(retry::kFirstBackoff),
      next_at_(steady_clock::now() + retry::kFirstBackoff) {}

bool ReleaseRetry::start(const std::shared_ptr<ClientImpl>& client, ReleaseOf release, SteadyTime give_up_at) {
  // A private constructor: make_shared cannot reach it.
  const std::shared_ptr<ReleaseRetry> retry(new ReleaseRetry(client, std::move(release), give_up_at));
  return client->async().schedule(retry);
}

std::optional<SteadyTime> ReleaseRetry::advance(SteadyTime now, ScriptBatch& batch) {
  std::lock_guard<std::mutex> lk(mu_);
  if (over_ || sent_) return std::nullopt;  // done, or the reply decides
  if (now >= give_up_at_) {
    over_ = true;
    client_->log().warn("fairlock: release of {} gave up after {} attempts: the grant has run out with its lease",
                        release_.name, attempts_);
    return std::nullopt;
  }
  // Shutting down: one last attempt now, whatever the backoff (the driver
  // looks at every waiter until none asks to be looked at again).
  const bool last = client_->stopped();
  if (!last && now < next_at_) return next_at_;
  send(now, batch);  // (at shutdown, its reply ends the retry: on_reply)
  return std::nullopt;
}

// One attempt, bounded like a give-up (a stalled server holds the async
// thread that long, not a whole command_timeout per attempt). It leaves the
// queue first: on a new master the member may still wait there (its grant,
// made on the old master, lost with it), kept live by its process's
// heartbeat for the process's other waits on the name, and would be granted
// at the head and hold the name for up to a liveness period. Only the release's reply counts: the cancel finds a
// holder ({2}: released next) or nothing as often as a waiter.
void ReleaseRetry::send(SteadyTime now, ScriptBatch& batch) {
  Server& server = client_->router().for_keys(release_.keys).server;
  bound_ = now + retry::kMaxBackoff;
  client_->async().track_deadline(*bound_);
  batch.add(server, cancel_call(release_.keys, release_.member, release_.permits),
            [](const redisReply*, const std::exception_ptr&) {});
  batch.add(server, release_call(release_.keys, release_.member, release_.permits, release_.queued_first),
            [self = shared_from_this()](const redisReply* reply, const std::exception_ptr& error) {
              self->on_reply(reply, error);
            });
  sent_ = true;
  ++attempts_;
}

void ReleaseRetry::on_reply(const redisReply* reply, const std::exception_ptr& error) noexcept {
  std::unique_lock<std::mutex> lk(mu_);
  sent_ = false;
  if (bound_) client_->async().untrack_deadline(*bound_);
  bound_.reset();
  try {
    if (error) std::rethrow_exception(error);
    const bool released = parse_released(*reply);
    over_ = true;
    log_outcome(released);
    return;
  } catch (const std::exception& e) {
    if (is_final(failure_of(e))) {
      over_ = true;
      client_->log().warn("fairlock: release of {} refused ({}): the grant runs out with its lease", release_.name,
                          e.what());
      return;
    }
    client_->log().debug("fairlock: release of {} failed again: {}", release_.name, e.what());
  }
  if (client_->stopped()) {  // the last attempt, at shutdown: none after it
    over_ = true;
    client_->log().warn(
        "fairlock: release of {} not asked again (the client shut down): the grant runs out with its "
        "lease",
        release_.name);
    return;
  }
  backoff_ = std::min(backoff_ * 2, retry::kMaxBackoff);
  next_at_ = steady_clock::now() + backoff_;
  lk.unlock();
  client_->async().schedule(shared_from_this());
}

void ReleaseRetry::log_outcome(bool released) {
  if (!release_.after_master_change) {
    client_->log().info("fairlock: release of {} retried: {} after {} attempts", release_.name,
                        released ? "released" : "nothing to release (an earlier attempt ran, or the lease ran out)",
                        attempts_);
  } else if (released) {
    client_->log().warn(
        "fairlock: release of {} was lost with the old master (not yet replicated): sent again, released",
        release_.name);
  }
}

}  // namespace fairlock::detail
