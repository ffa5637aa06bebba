#include "node/cluster_router.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "fairlock/errors.h"
#include "net/call_deadline.h"

namespace fairlock::detail {

namespace {

std::string address_of(const std::string& host, int port) {
  return host.find(':') == std::string::npos ? host + ":" + std::to_string(port)
                                             : "[" + host + "]:" + std::to_string(port);
}

// A redirection's host; empty or "?" (a node that does not know its
// address, cluster-preferred-endpoint-type unknown-endpoint): the server
// that answered.
std::string host_of(const Redirect& to, const Server& from) {
  return to.host.empty() || to.host == "?" ? from.endpoint().host : to.host;
}

}  // namespace

ClusterRouter::ClusterRouter(ClusterConfig config, ServerConfig server_config, WakeConfig wake_config, WakeSink& sink,
                             Counters& counters, spdlog::logger& log)
    : config_(std::move(config)),
      server_config_(std::move(server_config)),
      wake_config_(std::move(wake_config)),
      sink_(sink),
      counters_(counters),
      log_(log) {
  server_config_.redirects = this;
  for (const Endpoint& seed : config_.seeds) node_at(seed.host, seed.port);
}

ClusterRouter::~ClusterRouter() { ClusterRouter::stop(); }

Node& ClusterRouter::for_key(std::string_view key) {
  const std::uint16_t slot = key_slot(key);
  std::lock_guard<std::mutex> lk(mu_);
  Node* owner = owner_[slot];
  // Not known (no map yet, or a slot without a master): a seed, whose
  // -MOVED teaches the owner, or whose failure is retried as any other.
  return owner != nullptr ? *owner : *nodes_.front();
}

// The masters of the map (every node met, while there is no map): a
// replica would list its master's names again.
void ClusterRouter::for_each(const std::function<void(Node&)>& f) {
  const std::vector<Node*> known = masters();
  for (Node* n : known.empty() ? nodes() : known) f(*n);
}

std::vector<Node*> ClusterRouter::masters() const {
  std::lock_guard<std::mutex> lk(mu_);
  std::vector<Node*> out;
  for (Node* owner : owner_) {
    if (owner != nullptr && std::find(out.begin(), out.end(), owner) == out.end()) out.push_back(owner);
  }
  return out;
}

std::vector<Node*> ClusterRouter::nodes() const {
  std::lock_guard<std::mutex> lk(mu_);
  std::vector<Node*> out;
  out.reserve(nodes_.size());
  for (const auto& n : nodes_) out.push_back(n.get());
  return out;
}

// A node that refused the map (AccessDenied: the user lacks +cluster|slots,
// or a wrong password) fails the start when no node gave it: asking again
// would not cure it.
Notify ClusterRouter::start() {
  Unanswered why;
  if (!refresh(&why)) {
    if (why.refusal) std::rethrow_exception(why.refusal);
    log_.warn("fairlock: no node of the cluster answered CLUSTER SLOTS yet ({}): asking again every second", why.last);
  }
  std::vector<Node*> known;
  {
    std::lock_guard<std::mutex> lk(mu_);
    started_ = true;  // a node met from now on is started by node_at
    for (const auto& n : nodes_) known.push_back(n.get());
  }
  const Notify mode = start_nodes(known);
  follower_.start([this] { follow(); });
  return mode;
}

// Reads the map every kRefreshEvery, or soon after a server was
// unreachable, but not within kRefreshGap of the last try (nor of the last
// read: a -MOVED's), so a cluster that is down is not asked in a loop.
void ClusterRouter::follow() {
  std::unique_lock<std::mutex> lk(mu_);
  auto tried = std::chrono::steady_clock::now();
  for (;;) {
    stop_cv_.wait_for(lk, kRefreshEvery, [this] { return stopping_ || refresh_soon_; });
    const auto not_before = std::max(tried, refreshed_at_) + kRefreshGap;
    if (stop_cv_.wait_until(lk, not_before, [this] { return stopping_; })) return;
    refresh_soon_ = false;
    tried = std::chrono::steady_clock::now();
    lk.unlock();
    refresh();
    lk.lock();
  }
}

void ClusterRouter::unreachable(const Server&) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (refresh_soon_) return;
    refresh_soon_ = true;
  }
  stop_cv_.notify_all();
}

void ClusterRouter::stop() noexcept {
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  stop_cv_.notify_all();
  follower_.stop();
  for (Node* n : nodes()) n->wake.stop();
}

Node& ClusterRouter::node_at(const std::string& host, int port) {
  Node* node = nullptr;
  {
    std::lock_guard<std::mutex> lk(mu_);
    Node*& known = by_address_[address_of(host, port)];
    if (known != nullptr) return *known;
    Endpoint ep = config_.seeds.front();
    ep.host = host;
    ep.port = port;
    Target target{ep, config_.tls, config_.connect_timeout, config_.command_timeout};
    nodes_.push_back(std::make_unique<Node>(target, server_config_, wake_config_, sink_, counters_, log_));
    node = known = nodes_.back().get();
    // Under the lock, so that stop() cannot come between (a start(false)
    // only starts the subscriber's thread).
    if (started_ && !stopping_) node->wake.start(false);
  }
  return *node;
}

Server& ClusterRouter::moved(const Redirect& to, const Server& from) {
  Node& owner = node_at(host_of(to, from), to.port);
  bool refresh_now = false;
  bool changed = false;
  {
    std::lock_guard<std::mutex> lk(mu_);
    changed = owner_[to.slot] != &owner;
    owner_[to.slot] = &owner;
    const auto now = std::chrono::steady_clock::now();
    refresh_now = now - refreshed_at_ >= kRefreshGap;
    if (refresh_now) refreshed_at_ = now;
  }
  log_.debug("fairlock: slot {} moved to {}", to.slot, owner.server.where());
  if (refresh_now) refresh_from(owner);  // other slots likely moved with it
  if (changed) topology_changed();       // (a refresh finds the slot known already)
  return owner.server;
}

Server& ClusterRouter::asked(const Redirect& to, const Server& from) {
  return node_at(host_of(to, from), to.port).server;
}

bool ClusterRouter::serves(const Server& server, std::uint16_t slot) {
  std::lock_guard<std::mutex> lk(mu_);
  return owner_[slot] != nullptr && &owner_[slot]->server == &server;
}

bool ClusterRouter::mapped() const {
  std::lock_guard<std::mutex> lk(mu_);
  return refreshed_at_ != std::chrono::steady_clock::time_point{};
}

bool ClusterRouter::refresh(Unanswered* why) noexcept {
  std::vector<Node*> order = masters();
  for (const Endpoint& seed : config_.seeds) order.push_back(&node_at(seed.host, seed.port));
  return std::any_of(order.begin(), order.end(), [&](Node* n) { return !stopping() && refresh_from(*n, why); });
}

bool ClusterRouter::stopping() const {
  std::lock_guard<std::mutex> lk(mu_);
  return stopping_;
}

// One node's map, within kAskBound (or less: the caller's deadline): a node
// that is down or stalled costs little before the next is asked.
bool ClusterRouter::refresh_from(Node& node, Unanswered* why) {
  try {
    const auto limit = std::min({config_.connect_timeout, config_.command_timeout, kAskBound});
    const CallDeadline bound(std::chrono::steady_clock::now() + limit);
    const ReplyPtr r = node.server.command({"CLUSTER", "SLOTS"});
    apply(parse_cluster_slots(*r, node.server.endpoint().host));
    return true;
  } catch (const std::exception& e) {
    log_.debug("fairlock: {} did not give the slot map: {}", node.server.where(), e.what());
    if (why != nullptr) {
      why->last = node.server.where() + ": " + e.what();
      if (!why->refusal && dynamic_cast<const AccessDenied*>(&e) != nullptr) {
        why->refusal = std::make_exception_ptr(AccessDenied(why->last));
      }
    }
    return false;
  }
}

// The new map; claims are checked again if a slot changed its master.
void ClusterRouter::apply(const std::vector<SlotRange>& ranges) {
  std::vector<std::pair<const SlotRange*, Node*>> owners;
  for (const SlotRange& r : ranges) owners.emplace_back(&r, &node_at(r.host, r.port));
  bool changed = false;
  {
    std::lock_guard<std::mutex> lk(mu_);
    const bool first = refreshed_at_ == std::chrono::steady_clock::time_point{};
    refreshed_at_ = std::chrono::steady_clock::now();
    std::array<Node*, kSlotCount> fresh{};  // a slot no range names has no master now
    for (const auto& [range, node] : owners) {
      for (int s = range->first; s <= range->last; ++s) fresh[s] = node;
    }
    changed = !first && fresh != owner_;
    owner_ = fresh;
  }
  if (changed) {
    log_.info("fairlock: the cluster's slot map changed: checking every claim again");
    topology_changed();
  }
}

}  // namespace fairlock::detail
