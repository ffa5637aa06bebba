#pragma once
// Which server holds a name. Standalone today: one server for every name;
// Sentinel and Cluster routers will be further implementations.
#include <functional>
#include <memory>
#include <string>

#include "base/counters.h"
#include "fairlock/options.h"
#include "node/server.h"
#include "node/wake.h"
#include "protocol/keys.h"

namespace spdlog {
class logger;
}

namespace fairlock::detail {

// One server and its wake subscriber.
struct Node {
  Node(Target target, const ServerConfig& config, const WakeConfig& wake_config, WakeSink& sink, Counters& counters,
       spdlog::logger& log);
  Server server;
  Wake wake;
};

class Router {
 public:
  virtual ~Router() = default;
  // The node holding the keys of one name.
  virtual Node& for_keys(const Keys& keys) = 0;
  virtual void for_each(const std::function<void(Node&)>& f) = 0;

  // Opens a connection to every node (which checks the server: throws
  // what Server::open throws), then starts every node's subscriber; returns
  // the wake mode in effect on all of them (poll if any had to fall back).
  // A server it cannot reach costs no more than that one connection's try:
  // the subscribers then connect in the background.
  Notify start();
  void stop() noexcept;
};

// The router for Options::url (redis://, rediss:// or unix://).
std::unique_ptr<Router> make_router(const Options& o, const std::string& client_id, WakeSink& sink, Counters& counters,
                                    spdlog::logger& log);

}  // namespace fairlock::detail
