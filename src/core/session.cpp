#include "core/session.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "node/router.h"
#include "node/server_calls.h"

namespace fairlock::detail {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

Session::Session(milliseconds liveness, Counters& counters, spdlog::logger& log)
    : liveness_(liveness), counters_(counters), log_(log) {}

Session::~Session() { shutdown(); }

void Session::set_owner(std::function<std::shared_ptr<void>()> pin) { pin_ = std::move(pin); }

void Session::start(Router& router) {
  router_ = &router;
  thread_.start([this, stopped = stopped_] { loop(stopped); });
}

// ---------------------------------------------------------------- registry

void Session::enlist(const std::string& member, const std::shared_ptr<SessionMember>& m, milliseconds lease) {
  const milliseconds before = heartbeat_period();
  {
    std::lock_guard<std::mutex> lk(reg_mu_);
    auto [it, fresh] = registry_.try_emplace(member, Entry{m, lease.count()});
    if (!fresh) return;
    leases_.insert(lease.count());
  }
  if (heartbeat_period() < before) {  // a shorter lease: maybe beat sooner
    std::lock_guard<std::mutex> lk(hb_mu_);
    poke_ = true;
    hb_cv_.notify_all();
  }
}

void Session::delist(const std::string& member) {
  std::lock_guard<std::mutex> lk(reg_mu_);
  auto it = registry_.find(member);
  if (it != registry_.end()) erase(it);
}

void Session::erase(std::map<std::string, Entry>::iterator it) {
  leases_.erase(leases_.find(it->second.lease_ms));
  registry_.erase(it);
}

milliseconds Session::heartbeat_period() const {
  long long base = liveness_.count();
  {
    std::lock_guard<std::mutex> lk(reg_mu_);
    if (!leases_.empty()) base = std::min(base, *leases_.begin());
  }
  return milliseconds(std::max(10LL, base / 3));
}

std::vector<std::shared_ptr<SessionMember>> Session::members() {
  std::vector<std::shared_ptr<SessionMember>> out;
  std::lock_guard<std::mutex> lk(reg_mu_);
  out.reserve(registry_.size());
  for (auto it = registry_.begin(); it != registry_.end();) {
    auto next = std::next(it);
    if (auto m = it->second.member.lock()) {
      out.push_back(std::move(m));
    } else {
      erase(it);
    }
    it = next;
  }
  return out;
}

// ---------------------------------------------------------------- wake signals

// The wake thread's events run with the owner pinned too: if the user drops
// the last other reference meanwhile, the owner is destroyed on a thread of
// its own, never on the wake thread inside its loop.
void Session::granted(const std::string& member, std::uint64_t fence) {
  std::shared_ptr<void> keep = pinned();
  if (!keep) return;
  std::shared_ptr<SessionMember> m;
  {
    std::lock_guard<std::mutex> lk(reg_mu_);
    auto it = registry_.find(member);
    if (it != registry_.end()) m = it->second.member.lock();
  }
  if (m) m->on_signal(member, fence);
  m.reset();
  release_elsewhere(std::move(keep));
}

// The owner, pinned; null once it is going away. A session without an owner
// (tests) pins nothing.
std::shared_ptr<void> Session::pinned() const {
  static const auto unowned = std::make_shared<int>(0);
  return pin_ ? pin_() : unowned;
}

void Session::release_elsewhere(std::shared_ptr<void> keep) {
  if (keep.use_count() == 1) std::thread([k = std::move(keep)] {}).detach();
}

void Session::recheck(const std::string* name) {
  std::shared_ptr<void> keep = pinned();
  if (!keep) return;
  kick_waiters(name);
  release_elsewhere(std::move(keep));
}

void Session::kick_waiters(const std::string* name) {
  auto all = members();
  if (!name) {
    for (auto& m : all) m->kick();
    return;
  }
  // Grants follow ticket order, so the grantee is our earliest waiter there.
  std::shared_ptr<SessionMember> first;
  std::uint64_t best = 0;
  for (auto& m : all) {
    if (m->name() != *name) continue;
    auto t = m->waiting_ticket();
    if (t && (!first || *t < best)) {
      first = m;
      best = *t;
    }
  }
  counters_.add(&Stats::wakes_keyspace);  // before the waiter runs on
  if (first) {
    first->kick();
    return;
  }
  // Nobody eligible (a waiter's first reply is still in flight, or all are
  // already asking): ask every waiter there rather than drop the event.
  for (auto& m : all) {
    if (m->name() == *name) m->kick();
  }
}

// ---------------------------------------------------------------- heartbeat

// A round runs with the owner pinned. A user's callback in it (on_lost,
// on_position) may drop every other reference to the client: the last one
// then goes with `keep`, destroying this session on its own thread (which
// detaches it), so after that only `stopped`, shared, is read.
void Session::loop(const std::shared_ptr<std::atomic<bool>>& stopped) {
  auto next = steady_clock::now() + heartbeat_period();
  for (;;) {
    std::shared_ptr<void> keep = wait_for_round(next);
    if (!keep) return;
    const auto started = steady_clock::now();
    try {
      beat();
    } catch (const std::exception& e) {  // a heartbeat must never end the process
      log_.warn("fairlock: heartbeat failed: {}", e.what());
    }
    next = next_round(started, steady_clock::now());  // it may log: not under hb_mu_
    keep.reset();
    if (stopped->load()) return;
  }
}

// Waits until the round due at `next` (moved sooner when a shorter lease
// appears); the owner pinned for it, or null when stopping.
std::shared_ptr<void> Session::wait_for_round(SteadyTime& next) {
  std::unique_lock<std::mutex> lk(hb_mu_);
  for (;;) {
    const bool woken = hb_cv_.wait_until(lk, next, [&] { return stopping_ || poke_; });
    if (stopping_) return nullptr;
    if (!woken) return pinned();
    poke_ = false;
    next = std::min(next, steady_clock::now() + heartbeat_period());
  }
}

steady_clock::time_point Session::next_round(steady_clock::time_point started, steady_clock::time_point ended) {
  const milliseconds period = heartbeat_period();
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

void Session::beat() {
  std::map<Server*, std::map<std::string, Group>> by_server;
  const auto now = steady_clock::now();
  for (auto& m : members()) {
    auto item = m->beat_item(now);
    if (!item) continue;
    Server& server = router_->for_keys(m->keys()).server;
    by_server[&server][m->name()].items.emplace_back(m, std::move(*item));
  }
  for (auto& [server, groups] : by_server) beat_server(*server, groups);
}

void Session::beat_server(Server& server, std::map<std::string, Group>& groups) {
  struct Chunk {  // the claims of one heartbeat call: group.items[begin, begin + calls[i].entries.size())
    const std::string* name;
    Group* group;
    std::size_t begin;
  };
  std::vector<BeatName> calls;
  std::vector<Chunk> chunks;
  for (auto& [name, group] : groups) {
    const SessionMember& first = *group.items.front().first;
    for (std::size_t begin = 0; begin < group.items.size(); begin += kBeatCallSize) {
      const std::size_t end = std::min(group.items.size(), begin + kBeatCallSize);
      BeatName call{&first.keys(), first.permits(), {}};
      for (std::size_t j = begin; j < end; ++j) {
        const SessionMember::Beat& item = group.items[j].second;
        call.entries.push_back(BeatEntry{item.member, item.lease});
      }
      calls.push_back(std::move(call));
      chunks.push_back(Chunk{&name, &group, begin});
    }
  }
  const auto sent_at = steady_clock::now();
  std::vector<BeatReply> replies;
  try {
    replies = heartbeat(server, liveness_, calls);  // one round trip for every name here
  } catch (const std::exception& e) {
    log_.warn("fairlock: heartbeat failed: {}", e.what());
    for (auto& [name, group] : groups) {
      for (auto& [m, item] : group.items) m->on_beat_error(item, e.what());
    }
    return;
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
}

// ---------------------------------------------------------------- shutdown

void Session::release_held() {
  std::map<Server*, std::vector<ReleaseCall>> by_server;
  std::vector<std::shared_ptr<SessionMember>> held;  // keeps the keys alive
  for (auto& m : members()) {
    if (auto member = m->on_shutdown()) {
      Server* server = router_ ? &router_->for_keys(m->keys()).server : nullptr;
      if (!server) continue;
      by_server[server].push_back(ReleaseCall{&m->keys(), *member, m->permits()});
      held.push_back(m);
    }
  }
  for (auto& [server, calls] : by_server) {
    try {
      release_all(*server, calls);
    } catch (const std::exception& e) {
      log_.warn("fairlock: releasing grants at shutdown failed (they expire with their leases): {}", e.what());
    }
  }
}

void Session::shutdown() noexcept {
  bool first = false;
  {
    std::lock_guard<std::mutex> lk(hb_mu_);
    first = !stopping_;
    stopping_ = true;
    stopped_->store(true);
    hb_cv_.notify_all();
  }
  if (first) release_held();
  thread_.stop();  // on its own thread (a callback): detached, it ends by itself
}

}  // namespace fairlock::detail
