#pragma once
// A release that failed in a way that may pass (the server restarting, a
// master failing over, a connection cut): sent again with the async
// thread's rounds, backing off, until it runs, is refused, or the grant
// would have run out anyway (its lease from the failure). Without it the
// next waiter waits out the lease; with it, the failover's time. The
// caller has been told Released::failed already: what the retry finds is
// only logged (a release that finds nothing may mean an earlier attempt ran).
// Each attempt also takes the member out of the queue (a cancel before the
// release), where a failover may have put it back.
// Each attempt is bounded by kMaxBackoff; at shutdown the retry makes one
// last attempt at once and ends: Client::shutdown never waits out a lease.
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "api/async_driver.h"
#include "protocol/keys.h"

namespace fairlock::detail {

class ClientImpl;

struct ReleaseOf {
  std::string name;
  Keys keys;
  std::string member;
  std::uint32_t permits = 1;
  bool queued_first = false;
  // Sent again because the master changed after it ran (api/recent_releases.h):
  // finding nothing then is the rule, not a doubt.
  bool after_master_change = false;
};

class ReleaseRetry final : public AsyncWaiter, public std::enable_shared_from_this<ReleaseRetry> {
 public:
  // Schedules the retries; false if the client's async thread has stopped.
  static bool start(const std::shared_ptr<ClientImpl>& client, ReleaseOf release, SteadyTime give_up_at);
  std::optional<SteadyTime> advance(SteadyTime now, ScriptBatch& batch) override;

 private:
  ReleaseRetry(std::shared_ptr<ClientImpl> client, ReleaseOf release, SteadyTime give_up_at);
  void send(SteadyTime now, ScriptBatch& batch);
  void on_reply(const redisReply* reply, const std::exception_ptr& error) noexcept;
  void log_outcome(bool released);

  const std::shared_ptr<ClientImpl> client_;
  const ReleaseOf release_;
  const SteadyTime give_up_at_;
  std::mutex mu_;
  bool sent_ = false;                // a call is out: its reply decides what comes next
  bool over_ = false;                // given up, done, or the attempt at shutdown answered
  std::optional<SteadyTime> bound_;  // the attempt's deadline, tracked by the driver while it is out
  int attempts_ = 0;
  std::chrono::milliseconds backoff_;
  SteadyTime next_at_;
};

}  // namespace fairlock::detail
