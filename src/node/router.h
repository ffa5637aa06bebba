#pragma once
// Which server holds a name: one server for every name (a standalone one,
// or the master of a Sentinel set, asked of the sentinels before each new
// connection), or the master serving the name's slot of a Redis Cluster
// (node/cluster_router.h).
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

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
  // The node holding a key; the keys of one name (all in one slot).
  virtual Node& for_key(std::string_view key) = 0;
  Node& for_keys(const Keys& keys) { return for_key(keys.q); }
  virtual void for_each(const std::function<void(Node&)>& f) = 0;
  // A PUBLISH enters the replication stream (not on a cluster: the bus).
  virtual bool publish_replicates() const { return true; }
  // A name's server may change (Sentinel, a cluster): not a standalone
  // server's, where nothing on_master_change() adds is ever called.
  virtual bool changes_master() const { return true; }

  // Opens a connection to every node (which checks the server: throws
  // what Server::open throws), then starts every node's subscriber; returns
  // the wake mode in effect on all of them (poll if any had to fall back).
  // A server it cannot reach costs no more than that one connection's try:
  // the subscribers then connect in the background.
  virtual Notify start();
  virtual void stop() noexcept;
  // Adds a listener called when a server's master changed (Sentinel; a
  // cluster's slot map), after its wake subscriber was told to subscribe
  // again; on the thread that found the change (any call's): it must not
  // block. Added before any call starts.
  void on_master_change(std::function<void()> f);

 protected:
  void master_changed(Node& node);
  // Claims should ask their servers again now (a slot changed its master).
  void topology_changed();
  // What start() does, on these nodes.
  static Notify start_nodes(const std::vector<Node*>& nodes);

 private:
  std::mutex mu_;
  std::vector<std::function<void()>> on_master_change_;  // guarded by mu_
};

// The router for Options::url (redis://, rediss://, unix://,
// redis-sentinel://, rediss-sentinel://, redis-cluster:// or
// rediss-cluster://).
std::unique_ptr<Router> make_router(const Options& o, const std::string& client_id, WakeSink& sink, Counters& counters,
                                    spdlog::logger& log);

}  // namespace fairlock::detail
