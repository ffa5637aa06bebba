#include "node/router.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "fairlock/errors.h"
#include "net/master_locator.h"
#include "net/tls.h"
#include "node/cluster_router.h"
#include "protocol/who.h"

namespace fairlock::detail {

namespace {

// One TLS context for every server of a client (null for plain URLs).
std::shared_ptr<const TlsContext> tls_context_for(const TlsOptions& tls, const Endpoint& ep, spdlog::logger& log) {
  if (!ep.tls) return nullptr;
  if (tls.insecure_skip_verify_testing_only) {
    log.warn("fairlock: TLS certificates are NOT verified (insecure_skip_verify_testing_only): for tests only");
  }
  return std::make_shared<const TlsContext>(tls);
}

// How long one sentinel may take to connect and answer: short, so that a
// sentinel that is down or stalled costs little before the next is asked.
std::chrono::milliseconds sentinel_timeout(const Options& o) {
  return std::min({o.connect_timeout, o.command_timeout, std::chrono::milliseconds(1000)});
}

// The locator of a Sentinel URL: the sentinels with their own credentials
// and TLS settings (Options::sentinel), the master's name.
std::shared_ptr<MasterLocator> locator_for(const Options& o, Address& a, spdlog::logger& log) {
  SentinelConfig config{std::move(a.sentinels), a.master_name, nullptr, sentinel_timeout(o)};
  for (Endpoint& s : config.sentinels) {
    s.user = o.sentinel.user;
    s.password = o.sentinel.password;
  }
  config.tls = tls_context_for(o.sentinel.tls ? *o.sentinel.tls : o.tls, a.node, log);
  return std::make_shared<MasterLocator>(std::move(config), log);
}

ServerConfig server_config(const Options& o, const std::string& client_id) {
  return ServerConfig{o.pool_size,
                      o.use_functions ? ScriptWay::functions : ScriptWay::evalsha,
                      o.allow_evicting_server,
                      who_key(o.key_prefix, client_id),
                      who_value(this_process(o.description)),
                      who_expiry(o.liveness_ttl)};
}

// One server for every name: a standalone one, or a Sentinel set's master.
class StandaloneRouter final : public Router {
 public:
  StandaloneRouter(const Target& target, const Options& o, const WakeConfig& wake_config, WakeSink& sink,
                   Counters& counters, spdlog::logger& log)
      : node_(target, server_config(o, wake_config.client_id), wake_config, sink, counters, log),
        changes_master_(target.locator != nullptr) {
    if (target.locator) target.locator->on_change([this] { master_changed(node_); });
  }
  bool changes_master() const override { return changes_master_; }
  Node& for_key(std::string_view) override { return node_; }
  void for_each(const std::function<void(Node&)>& f) override { f(node_); }

 private:
  Node node_;
  const bool changes_master_;  // through Sentinel
};

// A cluster's router.
std::unique_ptr<Router> cluster_router(const Options& o, const std::string& client_id, Address& a,
                                       const WakeConfig& wake, WakeSink& sink, Counters& counters,
                                       spdlog::logger& log) {
  if (o.notify == Notify::keyspace) {
    throw BadOption("Options::notify", "keyspace mode does not work on Redis Cluster: use publish (or poll)");
  }
  WakeConfig sharded = wake;
  sharded.sharded = o.notify == Notify::publish;  // SPUBLISH: never over the cluster bus
  ClusterConfig cluster{std::move(a.cluster_seeds), tls_context_for(o.tls, a.node, log), o.connect_timeout,
                        o.command_timeout};
  return std::make_unique<ClusterRouter>(std::move(cluster), server_config(o, client_id), sharded, sink, counters, log);
}

}  // namespace

Node::Node(Target target, const ServerConfig& config, const WakeConfig& wake_config, WakeSink& sink, Counters& counters,
           spdlog::logger& log)
    : server(std::move(target), config, counters, log), wake(server, wake_config, sink, counters, log) {}

Notify Router::start() {
  std::vector<Node*> nodes;
  for_each([&](Node& n) { nodes.push_back(&n); });
  return start_nodes(nodes);
}

Notify Router::start_nodes(const std::vector<Node*>& nodes) {
  for (Node* n : nodes) n->server.start_following();
  bool reached = true;
  for (Node* n : nodes) reached = n->server.open() && reached;
  Notify mode = Notify::publish;
  bool first = true;
  for (Node* n : nodes) {
    Notify m = n->wake.start(reached);
    if (first || m == Notify::poll) mode = m;
    first = false;
  }
  return mode;
}

void Router::stop() noexcept {
  for_each([](Node& n) {
    n.server.stop_following();
    n.wake.stop();
  });
}

void Router::on_master_change(std::function<void()> f) {
  std::lock_guard<std::mutex> lk(mu_);
  on_master_change_.push_back(std::move(f));
}

void Router::master_changed(Node& node) {
  node.wake.reconnect();
  topology_changed();
}

void Router::topology_changed() {
  std::vector<std::function<void()>> listeners;
  {
    std::lock_guard<std::mutex> lk(mu_);
    listeners = on_master_change_;
  }
  for (const auto& f : listeners) f();
}

std::unique_ptr<Router> make_router(const Options& o, const std::string& client_id, WakeSink& sink, Counters& counters,
                                    spdlog::logger& log) {
  WakeConfig wake{o.notify, o.key_prefix, client_id, o.connect_timeout, o.configure_keyspace_events};
  Address a = parse_address(o.url);
  if (a.in_cluster()) return cluster_router(o, client_id, a, wake, sink, counters, log);
  Target target{a.node, tls_context_for(o.tls, a.node, log), o.connect_timeout, o.command_timeout};
  if (a.via_sentinel()) target.locator = locator_for(o, a, log);
  return std::make_unique<StandaloneRouter>(target, o, wake, sink, counters, log);
}

}  // namespace fairlock::detail
