#include "api/recent_releases.h"

#include <algorithm>

#include "api/client_impl.h"

namespace fairlock::detail {

void RecentReleases::note(ReleaseOf release, SteadyTime until) {
  std::lock_guard<std::mutex> lk(mu_);
  // Only the oldest are looked at here (a release stays cheap); an ended
  // one behind a live one goes at live(), or when kKept push it out.
  const SteadyTime now = std::chrono::steady_clock::now();
  while (!kept_.empty() && (kept_.front().second <= now || kept_.size() >= kKept)) kept_.pop_front();
  kept_.emplace_back(std::move(release), until);
}

void RecentReleases::send_again(const std::shared_ptr<ClientImpl>& client) {
  for (auto& [release, until] : live(std::chrono::steady_clock::now())) {
    release.after_master_change = true;
    if (!ReleaseRetry::start(client, std::move(release), until)) return;  // the async thread has stopped
  }
}

// Leases differ per name, so an ended one may sit behind a live one: all
// are looked at (at most kKept, once per master change).
std::vector<std::pair<ReleaseOf, SteadyTime>> RecentReleases::live(SteadyTime now) {
  std::lock_guard<std::mutex> lk(mu_);
  kept_.erase(std::remove_if(kept_.begin(), kept_.end(), [now](const auto& r) { return r.second <= now; }),
              kept_.end());
  return {kept_.begin(), kept_.end()};
}

}  // namespace fairlock::detail
