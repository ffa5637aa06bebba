#include "node/router.h"

#include <spdlog/spdlog.h>

#include "net/tls.h"
#include "protocol/who.h"

namespace fairlock::detail {

namespace {

// One TLS context for every server of a client (null for plain URLs).
std::shared_ptr<const TlsContext> tls_context_for(const Options& o, const Endpoint& ep, spdlog::logger& log) {
  if (!ep.tls) return nullptr;
  if (o.tls.insecure_skip_verify_testing_only) {
    log.warn("fairlock: TLS certificates are NOT verified (insecure_skip_verify_testing_only): for tests only");
  }
  return std::make_shared<const TlsContext>(o.tls);
}

ServerConfig server_config(const Options& o, const std::string& client_id) {
  return ServerConfig{o.pool_size,
                      o.use_functions ? ScriptWay::functions : ScriptWay::evalsha,
                      o.allow_evicting_server,
                      who_key(o.key_prefix, client_id),
                      who_value(this_process(o.description)),
                      who_expiry(o.liveness_ttl)};
}

class StandaloneRouter final : public Router {
 public:
  StandaloneRouter(Target target, const Options& o, const WakeConfig& wake_config, WakeSink& sink, Counters& counters,
                   spdlog::logger& log)
      : node_(std::move(target), server_config(o, wake_config.client_id), wake_config, sink, counters, log) {}
  Node& for_keys(const Keys&) override { return node_; }
  void for_each(const std::function<void(Node&)>& f) override { f(node_); }

 private:
  Node node_;
};

}  // namespace

Node::Node(Target target, const ServerConfig& config, const WakeConfig& wake_config, WakeSink& sink, Counters& counters,
           spdlog::logger& log)
    : server(std::move(target), config, counters, log), wake(server, wake_config, sink, counters, log) {}

Notify Router::start() {
  bool reached = true;
  for_each([&](Node& n) { reached = n.server.open() && reached; });
  Notify mode = Notify::publish;
  bool first = true;
  for_each([&](Node& n) {
    Notify m = n.wake.start(reached);
    if (first || m == Notify::poll) mode = m;
    first = false;
  });
  return mode;
}

void Router::stop() noexcept {
  for_each([](Node& n) { n.wake.stop(); });
}

std::unique_ptr<Router> make_router(const Options& o, const std::string& client_id, WakeSink& sink, Counters& counters,
                                    spdlog::logger& log) {
  WakeConfig wake{o.notify, o.key_prefix, client_id, o.connect_timeout, o.configure_keyspace_events};
  Endpoint ep = parse_url(o.url);
  Target target{ep, tls_context_for(o, ep, log), o.connect_timeout, o.command_timeout};
  return std::make_unique<StandaloneRouter>(std::move(target), o, wake, sink, counters, log);
}

}  // namespace fairlock::detail
