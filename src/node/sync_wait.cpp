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
  if (is_error(wait)) throw_reply_error(wait, "WAIT");
  return static_cast<int>(reply_integer(wait));
}

}  // namespace fairlock::detail
