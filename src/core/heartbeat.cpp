#include "core/heartbeat.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

#include "base/retry_policy.h"
#include "net/call_deadline.h"
#include "node/router.h"
#include "node/server_calls.h"

namespace fairlock::detail {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

void Heartbeat::start(Router& router) {
  router_ = &router;
  thread_.start([this, stopped = stopped_] { loop(stopped); });
}

void Heartbeat::poke() {
  std::lock_guard<std::mutex> lk(mu_);
  poke_ = true;
  cv_.notify_all();
}

void Heartbeat::round_now() {
  std::lock_guard<std::mutex> lk(mu_);
  round_now_ = true;
  cv_.notify_all();
}

bool Heartbeat::halt() noexcept {
  std::lock_guard<std::mutex> lk(mu_);
  const bool first = !stopping_;
  stopping_ = true;
  stopped_->store(true);
  cv_.notify_all();
  return first;
}

void Heartbeat::stop() noexcept {
  halt();
  thread_.stop();  // on its own thread (a callback): detached, it ends by itself
}

// A round runs with the owner pinned. A user's callback in it (on_lost,
// on_position) may drop every other reference to the client: the last one
// then goes with `keep`, destroying the session and this heartbeat on its
// own thread (which detaches it), so after that only `stopped`, shared, is
// read.
void Heartbeat::loop(const std::shared_ptr<std::atomic<bool>>& stopped) {
  auto next = steady_clock::now() + registry_.heartbeat_period();
  for (;;) {
    std::shared_ptr<void> keep = wait_for_round(next);
    if (!keep) return;
    const auto started = steady_clock::now();
    try {
      beat();
    } catch (const std::exception& e) {  // a heartbeat must never end the process
      log_.warn("fairlock: heartbeat failed: {}", e.what());
    }
    next = next_round(started, steady_clock::now());  // it may log: not under mu_
    keep.reset();
    if (stopped->load()) return;
  }
}

// Waits until the round due at `next` (moved sooner when a shorter lease
// appears); the owner pinned for it, or null when stopping.
std::shared_ptr<void> Heartbeat::wait_for_round(SteadyTime& next) {
  std::unique_lock<std::mutex> lk(mu_);
  for (;;) {
    const bool woken = cv_.wait_until(lk, next, [&] { return stopping_ || poke_ || round_now_; });
    if (stopping_) return nullptr;
    if (!woken || std::exchange(round_now_, false)) return owner_.pin();
    poke_ = false;
    next = std::min(next, steady_clock::now() + registry_.heartbeat_period());
  }
}

steady_clock::time_point Heartbeat::next_round(steady_clock::time_point started, steady_clock::time_point ended) {
  const milliseconds period = registry_.heartbeat_period();
  if (ended - started > period && (!last_overrun_warning_ || ended - *last_overrun_warning_ >= kOverrunWarningEvery)) {
    last_overrun_warning_ = ended;
    log_.warn(
        "fairlock: a heartbeat round took {} ms, longer than its period of {} ms (a third of "
        "liveness_ttl or of the shortest lease): the server is slow, this process has many "
        "claims, or an on_lost/on_position callback ran long (at most one such warning per {} s)",
        std::chrono::duration_cast<milliseconds>(ended - started).count(), period.count(),
        std::chrono::duration_cast<std::chrono::seconds>(kOverrunWarningEvery).count());
  }
  return next_heartbeat_round(started, ended, period);
}

steady_clock::time_point next_heartbeat_round(steady_clock::time_point started, steady_clock::time_point ended,
                                              milliseconds period) {
  return std::max(started + period, std::min(ended + period / 4, started + 2 * period));
}

void Heartbeat::beat() {
  std::map<std::string, std::uint64_t> floor = floors();  // before the claims are read: see floors()
  std::map<Server*, std::map<std::string, Group>> by_server;
  // A name's server, asked once per round: a slot map that changes during
  // the loop must not split a name's claims over two calls, each with the
  // floor, which would drop the other call's members as no longer had.
  std::map<std::string, Server*> server_of;
  const auto now = steady_clock::now();
  for (auto& m : registry_.members()) {
    auto item = m->beat_item(now);
    if (!item) continue;
    Server*& server = server_of[m->name()];
    if (server == nullptr) server = &router_->for_keys(m->keys()).server;
    Group& group = by_server[server][m->name()];
    group.items.emplace_back(m, std::move(*item));
    group.floor = floor[m->name()];
  }
  if (by_server.empty()) return;  // an idle client's registration may expire (node/registration.h)
  beat_servers(by_server);
  keep_registered_elsewhere(by_server);
}

// Per name, the latest ticket a claim of this process learned (queued or
// granted, ended since or not), read before the claims of the round are:
// the heartbeat's floor (lua/heartbeat.lua), at or below which a queued
// member of this process that the round does not send is one it no longer
// has (the claim that learned the floor, if it ended, among them), and
// leaves the queue. A claim the round misses because it enlisted after the
// read asked after the reply that taught the floor, so its own ticket is
// above it (tickets grow on one master; across a failover, unless the new
// master's clock runs behind the old one's by more than the time between the
// two asks: then such a claim is dropped, learns it is gone at its next
// heartbeat, and queues again).
std::map<std::string, std::uint64_t> Heartbeat::floors() { return registry_.floors(); }

// A client with claims stays registered: on a cluster its registration's
// master may hold none of them (no call there refreshes it). Bounded by a
// quarter period (a SET on a healthy master takes a millisecond): a stalled
// master costs each round little more.
void Heartbeat::keep_registered_elsewhere(const std::map<Server*, std::map<std::string, Group>>& by_server) {
  const CallDeadline bound(steady_clock::now() + registry_.heartbeat_period() / 4);
  router_->for_each([&](Node& node) {
    if (by_server.count(&node.server) == 0) node.server.keep_registered();
  });
}

// Every server's round trip, those that failed last time last. With
// several servers (a cluster's masters) each gets a period at most (and
// the WAIT's time, when renewals need replicas): one stalled master must
// not hold back the renewals on the others beyond a period.
void Heartbeat::beat_servers(std::map<Server*, std::map<std::string, Group>>& by_server) {
  std::vector<Server*> order;
  for (auto& entry : by_server) order.push_back(entry.first);
  std::stable_partition(order.begin(), order.end(), [this](const Server* s) { return failing_.count(s) == 0; });
  for (Server* server : order) {
    if (beat_server(*server, by_server[server], order.size() > 1)) {
      failing_.erase(server);
    } else {
      failing_.insert(server);
    }
  }
}

bool Heartbeat::beat_server(Server& server, std::map<std::string, Group>& groups, bool bounded) {
  struct Chunk {  // the claims of one heartbeat call: group.items[begin, begin + calls[i].entries.size())
    const std::string* name;
    Group* group;
    std::size_t begin;
  };
  std::vector<BeatName> calls;
  std::vector<Chunk> chunks;
  SyncWait sync;  // the most replicas a renewal here needs (none: no WAIT)
  for (auto& [name, group] : groups) {
    for (const auto& item : group.items) sync = stricter(std::move(sync), item.second.sync);
    const SessionMember& first = *group.items.front().first;
    for (std::size_t begin = 0; begin < group.items.size(); begin += kBeatCallSize) {
      const std::size_t end = std::min(group.items.size(), begin + kBeatCallSize);
      // The floor only with every claim of the name in the call: the others' would be dropped.
      const std::uint64_t floor = group.items.size() <= kBeatCallSize ? group.floor : 0;
      BeatName call{&first.keys(), first.permits(), {}, floor};
      for (std::size_t j = begin; j < end; ++j) {
        const SessionMember::Beat& item = group.items[j].second;
        call.entries.push_back(BeatEntry{item.member, item.lease});
      }
      calls.push_back(std::move(call));
      chunks.push_back(Chunk{&name, &group, begin});
    }
  }
  const auto sent_at = steady_clock::now();
  std::optional<CallDeadline> bound;
  if (bounded) {
    const milliseconds wait = sync.replicas > 0 ? sync.timeout + retry::kSyncSlack : milliseconds(0);
    bound.emplace(sent_at + registry_.heartbeat_period() + wait);
  }
  std::vector<BeatReply> replies;
  try {
    replies = heartbeat(server, liveness_, calls, sync);  // one round trip for every name here
  } catch (const std::exception& e) {
    log_.warn("fairlock: heartbeat failed: {}", e.what());
    for (auto& [name, group] : groups) {
      for (auto& [m, item] : group.items) m->on_beat_error(item, e.what());
    }
    return false;
  }
  counters_.add(&Stats::heartbeats);
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    const BeatReply& reply = replies[i];
    const Chunk& chunk = chunks[i];
    if (!reply.error.empty()) log_.warn("fairlock: heartbeat of {} failed: {}", *chunk.name, reply.error);
    for (std::size_t j = 0; j < calls[i].entries.size(); ++j) {
      auto& [m, item] = chunk.group->items[chunk.begin + j];
      if (reply.error.empty()) {
        m->on_beat(item, reply.results[j], sent_at);
      } else {
        m->on_beat_error(item, reply.error);
      }
    }
  }
  return true;
}

}  // namespace fairlock::detail
