#pragma once
// The process's session, what a client's claims share: the registry of
// the live claims (Registry), the batched heartbeat that keeps them alive
// (Heartbeat), and the routing of wake signals to them (WakeRouter).
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "base/counters.h"
#include "core/heartbeat.h"
#include "core/owner_pin.h"
#include "core/registry.h"
#include "core/session_member.h"
#include "core/wake_router.h"

namespace spdlog {
class logger;
}

namespace fairlock::detail {

class Router;

class Session {
 public:
  Session(std::chrono::milliseconds liveness, Counters& counters, spdlog::logger& log);
  ~Session() { shutdown(); }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // `pin` returns a reference that keeps the session's owner (the client)
  // alive, or null once it is going away (see OwnerPin). Set before any
  // thread starts.
  void set_owner(std::function<std::shared_ptr<void>()> pin) { owner_.set(std::move(pin)); }
  // Where the router's wake subscribers deliver their events.
  WakeSink& wake_sink() { return wake_router_; }
  void start(Router& router);
  // Cancels every wait, releases every held grant (one round trip per
  // server), stops the heartbeat.
  void shutdown() noexcept;

  void enlist(const std::string& member, const std::shared_ptr<SessionMember>& m, std::chrono::milliseconds lease);
  void delist(const std::string& member) { registry_.delist(member); }
  void learned(const std::string& name, std::uint64_t ticket) { registry_.learned(name, ticket); }
  // A third of the shortest lease (or liveness) in use now, at least 10 ms.
  std::chrono::milliseconds heartbeat_period() const { return registry_.heartbeat_period(); }

 private:
  void release_held();

  spdlog::logger& log_;
  Router* router_ = nullptr;
  Registry registry_;
  OwnerPin owner_;
  WakeRouter wake_router_;
  Heartbeat heartbeat_;  // last: stopped before the rest goes
};

}  // namespace fairlock::detail
