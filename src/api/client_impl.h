#pragma once
// What a Client is made of: the session (live claims, heartbeat) and the
// router (servers, their connections and wake subscribers), composed here.
#include <atomic>
#include <memory>
#include <string>

#include "api/async_driver.h"
#include "api/recent_releases.h"
#include "base/counters.h"
#include "core/session.h"
#include "fairlock/client.h"
#include "fairlock/options.h"
#include "net/deadline_keeper.h"
#include "node/router.h"

namespace spdlog {
class logger;
}

namespace fairlock::detail {

class ClientImpl : public std::enable_shared_from_this<ClientImpl> {
 public:
  explicit ClientImpl(Options o);
  ~ClientImpl();
  ClientImpl(const ClientImpl&) = delete;
  ClientImpl& operator=(const ClientImpl&) = delete;

  void start();
  void shutdown() noexcept;
  bool stopped() const { return stopping_.load(); }
  void check_running() const;  // throws Error once shut down

  const Options& options() const { return opts_; }
  const std::string& id() const { return id_; }
  Notify mode() const { return mode_; }
  spdlog::logger& log() { return *log_; }
  Counters& counters() { return counters_; }
  Session& session() { return session_; }
  AsyncDriver& async() { return async_; }
  // Cuts a blocking wait's call short when it is cancelled (shared with the
  // async driver, which may outlive the client on its own thread).
  const std::shared_ptr<DeadlineKeeper>& keeper() { return keeper_; }
  Router& router() { return *router_; }
  // Releases sent again when the master changes (api/recent_releases.h).
  RecentReleases& recent_releases() { return recent_releases_; }

 private:
  const Options opts_;
  const std::shared_ptr<spdlog::logger> log_;
  const std::string id_;
  Notify mode_;
  Counters counters_;
  std::shared_ptr<DeadlineKeeper> keeper_ = std::make_shared<DeadlineKeeper>();
  RecentReleases recent_releases_;
  AsyncDriver async_;  // before session_: waits it drives are cancelled through the session
  Session session_;
  std::unique_ptr<Router> router_;
  std::atomic<bool> stopping_{false};
};

}  // namespace fairlock::detail
