#pragma once
// Releases and leaves that ran, kept while what they ended could still come
// back: neither is WAITed for (Options::sync_replicas confirms grants), so a
// failover that promotes a replica one never reached brings back the
// released grant, acknowledged (it was), and the name waits out the holder's
// lease on the new master; or the waiter's entry, which its process's
// heartbeat keeps live (for its other waits on the name) and which, granted
// at the head, holds the name for up to a liveness period. When the master
// changes, each one still in its window is sent again (api/release_retry.h:
// a cancel, then a release): both scripts check the owner and a member is
// never used twice, so one that finds nothing changes nothing of others'.
// The window is the lease from the call (a grant cannot outlive it: its last
// renewal came before); at most kKept are kept, the latest, which are the
// ones a failover cuts.
#include <chrono>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "api/release_retry.h"

namespace fairlock::detail {

class RecentReleases {
 public:
  static constexpr std::size_t kKept = 1024;

  // A release or a leave that ran now; what it ended could live until `until`.
  void note(ReleaseOf release, SteadyTime until);
  // The master changed: each release whose grant could still live is sent
  // again, until it runs or its bound passes (a later change sends it again).
  void send_again(const std::shared_ptr<ClientImpl>& client);

 private:
  std::vector<std::pair<ReleaseOf, SteadyTime>> live(SteadyTime now);

  std::mutex mu_;
  std::deque<std::pair<ReleaseOf, SteadyTime>> kept_;  // in the order they ran
};

}  // namespace fairlock::detail
