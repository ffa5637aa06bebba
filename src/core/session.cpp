#include "core/session.h"

#include <spdlog/spdlog.h>

#include <map>
#include <vector>

#include "node/router.h"
#include "node/server_calls.h"

namespace fairlock::detail {

using std::chrono::milliseconds;

Session::Session(milliseconds liveness, Counters& counters, spdlog::logger& log)
    : log_(log),
      registry_(liveness),
      wake_router_(registry_, owner_, counters),
      heartbeat_(liveness, registry_, owner_, counters, log) {}

void Session::start(Router& router) {
  router_ = &router;
  router.on_master_change([this] { heartbeat_.round_now(); });
  heartbeat_.start(router);
}

void Session::enlist(const std::string& member, const std::shared_ptr<SessionMember>& m, milliseconds lease) {
  if (registry_.enlist(member, m, lease)) heartbeat_.poke();  // a shorter lease: maybe beat sooner
}

void Session::shutdown() noexcept {
  if (heartbeat_.halt()) release_held();
  heartbeat_.stop();
}

void Session::release_held() {
  std::map<Server*, std::vector<ReleaseCall>> by_server;
  std::vector<std::shared_ptr<SessionMember>> held;  // keeps the keys alive
  for (auto& m : registry_.members()) {
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

}  // namespace fairlock::detail
