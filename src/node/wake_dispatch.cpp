// What the subscriber of one server (node/wake.h) does with what it reads:
// a subscription confirmed, a wake message handed to the sink, and, in
// sharded mode, a channel this node refuses.
#include <spdlog/spdlog.h>

#include <string>
#include <string_view>

#include "net/reply.h"
#include "node/wake.h"
#include "protocol/formats.h"

namespace fairlock::detail {

void Wake::confirmed(const std::string& channel) {
  bool was_ok = true;
  {
    std::lock_guard<std::mutex> lk(mu_);
    confirmed_.insert(channel);
    if (channel == wake_channel_) was_ok = signals_ok_.exchange(true);
    cv_.notify_all();
  }
  if (!was_ok && started_once_) sink_.recheck(nullptr);  // a wake may have been lost meanwhile
  if (channel == wake_channel_) started_once_ = true;
}

void Wake::dispatch(const redisReply& r) {
  if (config_.sharded) return dispatch_sharded(r);
  if (!is_array(r) || reply_size(r) < 3) return;
  std::string_view kind = reply_string(reply_at(r, 0));
  std::string channel(reply_string(reply_at(r, 1)));
  if (kind == "subscribe") return confirmed(channel);
  if (kind != "message") return;
  std::string_view payload = reply_string(reply_at(r, 2));
  if (channel == wake_channel_) {
    if (auto m = parse_wake_message(payload)) sink_.granted(m->member, m->fence);
    return;
  }
  if (payload != "set") return;
  std::string name;
  {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = channel_name_.find(channel);
    if (it == channel_name_.end()) return;
    name = it->second;
  }
  sink_.recheck(&name);
}

// Sharded mode. The replies to SSUBSCRIBE and SUNSUBSCRIBE come in the
// order sent (pending_), among pushed messages. An error in place of an
// ssubscribe (MOVED: the slot is elsewhere now), or a sunsubscribe nobody
// asked for (the slot moved away: Redis unsubscribes its channels), means
// this node no longer signals that name (refused).
void Wake::dispatch_sharded(const redisReply& r) {
  if (is_error(r)) {
    if (pending_.empty()) return;
    auto [subscribe, channel] = std::move(pending_.front());
    pending_.pop_front();
    if (subscribe) refused(channel, reply_error(r));
    return;
  }
  if (!is_array(r) || reply_size(r) < 3) return;
  std::string_view kind = reply_string(reply_at(r, 0));
  std::string channel(reply_string(reply_at(r, 1)));
  if (kind == "smessage") {
    if (auto m = parse_wake_message(reply_string(reply_at(r, 2)))) sink_.granted(m->member, m->fence);
    return;
  }
  const bool subscribe = kind == "ssubscribe";
  if (!subscribe && kind != "sunsubscribe") return;
  const bool answer = !pending_.empty() && pending_.front() == std::pair{subscribe, channel};
  if (answer) pending_.pop_front();
  if (subscribe) return confirmed(channel);
  if (!answer) refused(channel, "unsubscribed by the server");
}

// This node will not signal `channel` (sharded): its name's waiters poll,
// and are told to ask now; the channel is not asked for again here but by
// a new watch() (no storm of SSUBSCRIBEs answered MOVED).
void Wake::refused(const std::string& channel, std::string_view why) {
  sent_.erase(channel);
  std::string name;
  {
    std::lock_guard<std::mutex> lk(mu_);
    confirmed_.erase(channel);
    auto it = channel_name_.find(channel);
    if (it == channel_name_.end()) return;
    refused_.insert(channel);
    name = it->second;
    cv_.notify_all();  // a watch() waiting for it stops waiting
    const auto w = watched_.find(name);
    if (w == watched_.end() || w->second == 0) return;  // no wait here to tell (an idle name's slot moved)
  }
  log_.info("fairlock: wake subscription for {} ended on this server ({}); its waiters poll", name, why);
  sink_.recheck(&name);
}

}  // namespace fairlock::detail
