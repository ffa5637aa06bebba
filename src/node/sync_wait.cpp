#include "node/sync_wait.h"

#include "fairlock/errors.h"

namespace fairlock::detail {

SyncTail::SyncTail(const SyncWait& wait)
    : channel_(wait.channel), replicas_(std::to_string(wait.replicas)), timeout_(std::to_string(wait.timeout.count())) {
  if (!channel_.empty()) commands_.push_back(Argv{"PUBLISH", channel_, ""});
  commands_.push_back(Argv{"WAIT", replicas_, timeout_});
}

int SyncTail::acks(const std::vector<ReplyPtr>& replies) const {
  if (replies.size() < commands_.size()) throw ServerError("fairlock: no reply to WAIT");
  if (!channel_.empty()) {
    const redisReply& publish = *replies[replies.size() - 2];
    if (is_error(publish)) throw_reply_error(publish, "PUBLISH");
  }
  const redisReply& wait = *replies.back();
  // A node that became a replica (a cluster's old master, back after its
  // failover: the calls before it were redirected, nothing ran): asked
  // again, of the master, as after any failover.
  if (reply_error(wait).find("cannot be used with replica") != std::string_view::npos) {
    throw ConnectionError("redis: WAIT on a replica (the node was failed over): " + std::string(reply_error(wait)));
  }
  if (is_error(wait)) throw_reply_error(wait, "WAIT");
  return static_cast<int>(reply_integer(wait));
}

}  // namespace fairlock::detail
