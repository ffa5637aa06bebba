#include "router.h"

namespace fairlock::detail {

namespace {

ServerOptions server_options(const Options& o) { return {o.connect_timeout, o.command_timeout, o.pool_size}; }

class StandaloneRouter final : public Router {
 public:
  StandaloneRouter(const Options& o, const WakeConfig& wake_config, WakeSink& sink, Counters& counters,
                   spdlog::logger& log)
      : node_(parse_url(o.url), o, wake_config, sink, counters, log) {}
  Node& for_keys(const Keys&) override { return node_; }
  void for_each(const std::function<void(Node&)>& f) override { f(node_); }

 private:
  Node node_;
};

}  // namespace

Node::Node(Endpoint ep, const Options& o, const WakeConfig& wake_config, WakeSink& sink, Counters& counters,
           spdlog::logger& log)
    : server(std::move(ep), server_options(o), counters, log), wake(server, wake_config, sink, counters, log) {}

Notify Router::start() {
  Notify mode = Notify::publish;
  bool first = true;
  for_each([&](Node& n) {
    Notify m = n.wake.start();
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
  return std::make_unique<StandaloneRouter>(o, wake, sink, counters, log);
}

}  // namespace fairlock::detail
