#pragma once
// The router of a Redis Cluster: one Node per server met (a seed, or a
// master of the slot map), the name's slot to the master serving it. The
// map comes from CLUSTER SLOTS: at start, every second, at once when a
// -MOVED says a slot moved, and soon after a call found its server
// unreachable (each at most every kRefreshGap).
#include <array>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/owned_thread.h"
#include "node/redirect.h"
#include "node/router.h"
#include "node/slot_map.h"
#include "protocol/slot.h"

namespace fairlock::detail {

// Where the cluster is, and how its servers are reached.
struct ClusterConfig {
  std::vector<Endpoint> seeds;  // only a way in: each with the nodes' credentials and TLS
  std::shared_ptr<const TlsContext> tls;
  std::chrono::milliseconds connect_timeout;
  std::chrono::milliseconds command_timeout;
};

class ClusterRouter final : public Router, private Redirects {
 public:
  static constexpr std::chrono::milliseconds kRefreshEvery{1000};
  static constexpr std::chrono::milliseconds kRefreshGap{100};
  // The longest one node may take to give its map (less if the connect or
  // command timeout is shorter).
  static constexpr std::chrono::milliseconds kAskBound{1000};

  ClusterRouter(ClusterConfig config, ServerConfig server_config, WakeConfig wake_config, WakeSink& sink,
                Counters& counters, spdlog::logger& log);
  ~ClusterRouter() override;
  Node& for_key(std::string_view key) override;
  void for_each(const std::function<void(Node&)>& f) override;
  bool publish_replicates() const override { return false; }
  Notify start() override;
  void stop() noexcept override;

 private:
  Server& moved(const Redirect& to, const Server& from) override;
  Server& asked(const Redirect& to, const Server& from) override;
  bool serves(const Server& server, std::uint16_t slot) override;
  void unreachable(const Server& server) override;
  bool mapped() const override;
  void follow();
  // The node at host:port (made, and started if the router is, when new).
  Node& node_at(const std::string& host, int port);
  // Why no node asked gave the map.
  struct Unanswered {
    std::exception_ptr refusal;  // the first AccessDenied (a user without +cluster|slots), naming its node
    std::string last;            // the last failure, for the log
  };
  // Asks the masters known, then the seeds, for the slot map: true once one
  // answered. A slot that changed owner has every claim checked again.
  bool refresh(Unanswered* why = nullptr) noexcept;
  bool refresh_from(Node& node, Unanswered* why = nullptr);
  void apply(const std::vector<SlotRange>& ranges);
  std::vector<Node*> nodes() const;
  std::vector<Node*> masters() const;  // in the map now
  bool stopping() const;

  const ClusterConfig config_;
  ServerConfig server_config_;
  const WakeConfig wake_config_;
  WakeSink& sink_;
  Counters& counters_;
  spdlog::logger& log_;

  mutable std::mutex mu_;
  std::condition_variable stop_cv_;
  bool started_ = false;                                  // guarded by mu_
  bool stopping_ = false;                                 // guarded by mu_
  bool refresh_soon_ = false;                             // a server was unreachable (guarded by mu_)
  std::chrono::steady_clock::time_point refreshed_at_{};  // guarded by mu_
  std::vector<std::unique_ptr<Node>> nodes_;              // never shrinks (guarded by mu_)
  std::map<std::string, Node*> by_address_;               // "host:port" (guarded by mu_)
  std::array<Node*, kSlotCount> owner_{};                 // null: not known (guarded by mu_)
  OwnedThread follower_;
};

}  // namespace fairlock::detail
