// Giving a grant back (api/leaving.h): release, its one retry on a fresh
// connection, the retry in the background when it fails in a way that may
// pass (api/release_retry.h), the note kept for a master change
// (api/recent_releases.h), and cancel.
#include <spdlog/spdlog.h>

#include <exception>
#include <string>

#include "api/client_impl.h"
#include "api/leaving.h"
#include "api/release_retry.h"
#include "node/failure.h"
#include "node/router.h"
#include "node/server_calls.h"

namespace fairlock::detail {

using std::chrono::steady_clock;

Released Leaving::release() noexcept {
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

void Leaving::unlock() noexcept {
  if (release() == Released::not_held) client_->log().warn("fairlock: unlock of {}: not held", name_);
}

Released Leaving::release_member(const ReleasePlan& plan) noexcept {
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

void Leaving::release_quietly(const std::string& member, bool queued_first) noexcept {
  try {
    if (detail::release(node().server, keys_, member, permits_, queued_first)) note_released(member, queued_first);
  } catch (const std::exception& e) {
    release_later(member, queued_first, e);
  }
}

// A release or a leave that ran: kept to be sent again if the master
// changes before a replica has it (api/recent_releases.h).
void Leaving::note_released(const std::string& member, bool queued_first) noexcept {
  if (!client_->router().changes_master()) return;  // a standalone server: never sent again
  try {
    client_->recent_releases().note(ReleaseOf{name_, keys_, member, permits_, queued_first},
                                    steady_clock::now() + opts_.lease);
  } catch (const std::exception&) {  // no memory: a failover may then leave the grant to its lease
  }
}

// A release that failed: asked again in the background (api/release_retry.h)
// while the grant may live, unless asking again cannot help.
void Leaving::release_later(const std::string& member, bool queued_first, const std::exception& error) noexcept {
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

void Leaving::cancel() noexcept {
  std::lock_guard<std::mutex> lk(mu_);
  if (claim_.cancel()) end_soon();
}

}  // namespace fairlock::detail
