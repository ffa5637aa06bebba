#include "net/master_locator.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "fairlock/errors.h"
#include "net/call_deadline.h"
#include "net/open_connection.h"
#include "net/reply.h"

namespace fairlock::detail {

bool same_address(const Endpoint& a, const Endpoint& b) { return a.host == b.host && a.port == b.port; }

namespace {

bool listed(const std::vector<Endpoint>& list, const Endpoint& ep) {
  return std::any_of(list.begin(), list.end(), [&](const Endpoint& e) { return same_address(e, ep); });
}

Endpoint at(Endpoint node, const Endpoint& master) {
  node.host = master.host;
  node.port = master.port;
  return node;
}

}  // namespace

MasterLocator::MasterLocator(SentinelConfig config, spdlog::logger& log)
    : config_(std::move(config)), log_(log), order_(config_.sentinels) {}

// SENTINEL get-master-addr-by-name: the master's host and port, or nothing
// when this sentinel knows no master of that name. Waits at most the
// sentinel timeout, less if the calling thread's deadline is nearer.
std::optional<Endpoint> MasterLocator::ask(const Endpoint& sentinel) {
  std::chrono::milliseconds timeout = config_.timeout;
  if (CallDeadline::binds(timeout)) timeout = std::max(std::chrono::milliseconds(1), CallDeadline::bound(timeout));
  ReplyPtr r;
  try {
    Connection c(Target{sentinel, config_.tls, timeout, timeout});
    r = c.command({"SENTINEL", "get-master-addr-by-name", config_.master_name});
    if (is_error(*r)) throw_reply_error(*r, "SENTINEL get-master-addr-by-name");
  } catch (const AccessDenied& e) {  // told in the words of the sentinels' own settings
    throw AccessDenied("sentinel " + sentinel.where() +
                       " refused: the sentinels' user and password are Options::sentinel's, not the URL's (" +
                       e.what() + ")");
  }
  if (is_nil(*r) || !is_array(*r) || reply_size(*r) != 2) return std::nullopt;
  Endpoint master;
  master.host = std::string(reply_string(reply_at(*r, 0)));
  const std::string port(reply_string(reply_at(*r, 1)));
  try {
    master.port = std::stoi(port);
  } catch (const std::exception&) {
    throw ServerError("sentinel: " + sentinel.where() + " named a master with port '" + port + "'");
  }
  return master;
}

void MasterLocator::move_to_front(std::size_t i) {
  std::lock_guard<std::mutex> lk(mu_);
  if (i < order_.size()) {
    const auto first = order_.begin() + static_cast<std::ptrdiff_t>(i);
    std::rotate(order_.begin(), first, first + 1);
  }
}

std::optional<Endpoint> MasterLocator::last_known() const {
  std::lock_guard<std::mutex> lk(mu_);
  return last_known_;
}

bool MasterLocator::silent() const {
  std::lock_guard<std::mutex> lk(mu_);
  return last_known_ && std::chrono::steady_clock::now() < silent_until_;
}

bool MasterLocator::resting(const Endpoint& sentinel) const {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = resting_until_.find(sentinel.where());
  return it != resting_until_.end() && std::chrono::steady_clock::now() < it->second;
}

void MasterLocator::rest(const Endpoint& sentinel) {
  std::lock_guard<std::mutex> lk(mu_);
  resting_until_[sentinel.where()] = std::chrono::steady_clock::now() + kSilentFor;
}

void MasterLocator::confirmed(const Endpoint& master) {
  bool changed = false;
  {
    std::lock_guard<std::mutex> lk(mu_);
    changed = last_known_ && !same_address(*last_known_, master);
    last_known_ = master;
  }
  if (!changed) return;
  ++generation_;
  log_.warn("fairlock: sentinel: the master of '{}' is now {}", config_.master_name, master.where());
  if (on_change_) on_change_();
}

void MasterLocator::demoted() { ++generation_; }

std::string MasterLocator::sentinel_list() const {
  std::string out;
  for (const auto& s : config_.sentinels) out += (out.empty() ? "" : ",") + s.where();
  return out;
}

Endpoint MasterLocator::locate(Endpoint node, const std::vector<Endpoint>& excluded) {
  const std::optional<Endpoint> last = last_known();
  if (last && silent() && !listed(excluded, *last)) return at(std::move(node), *last);
  std::vector<Endpoint> order;
  {
    std::lock_guard<std::mutex> lk(mu_);
    order = order_;
  }
  bool answered = false, named = false;
  std::string failures;
  std::exception_ptr setup_error;  // of the first sentinel whose setup cannot work
  for (std::size_t i = 0; i < order.size(); ++i) {
    if (resting(order[i])) continue;  // failed just now: a stalled one would cost a timeout again
    try {
      std::optional<Endpoint> master = ask(order[i]);
      answered = true;
      if (!master) continue;
      named = true;
      named_.store(true);
      if (listed(excluded, *master)) continue;
      move_to_front(i);
      return at(std::move(node), *master);
    } catch (const Error& e) {
      if (is_setup_error(e)) {
        if (!setup_error) setup_error = std::current_exception();
      } else {
        rest(order[i]);
      }
      failures += std::string(failures.empty() ? "" : "; ") + order[i].where() + ": " + e.what();
    }
  }
  // None answered, and one refused our credentials or TLS setup: asking
  // again cannot cure that.
  if (!answered && setup_error) std::rethrow_exception(setup_error);
  if (answered && !named) {
    throw UnknownMasterError("sentinel: none of " + sentinel_list() + " knows a master named '" + config_.master_name +
                             "' (SENTINEL get-master-addr-by-name)");
  }
  if (!answered) {
    std::lock_guard<std::mutex> lk(mu_);
    silent_until_ = std::chrono::steady_clock::now() + kSilentFor;
  }
  if (last && !listed(excluded, *last)) return at(std::move(node), *last);
  throw NotConnected("sentinel: none of " + sentinel_list() + " named a master of '" + config_.master_name +
                     "' that answers" + (failures.empty() ? "" : " (" + failures + ")"));
}

// One look: the master the sentinels name, if it is not the one known,
// confirmed by ROLE before it is taken.
void MasterLocator::check_master(Target data) noexcept {
  try {
    const Endpoint named = locate(data.endpoint, {});
    const std::optional<Endpoint> last = last_known();
    if (last && same_address(*last, named)) return;
    data.endpoint = named;
    Connection c(data);
    if (answers_as_master(c)) confirmed(named);
  } catch (const std::exception&) {  // the next connection asks again, and says why
  }
}

void MasterLocator::follow(Target data) {
  data.locator = nullptr;  // (the target's own: a copy would keep this alive)
  follower_.start([this, data] {
    std::unique_lock<std::mutex> lk(follow_mu_);
    while (!follow_cv_.wait_for(lk, kFollowEvery, [this] { return stop_following_; })) {
      lk.unlock();
      check_master(data);
      lk.lock();
    }
  });
}

void MasterLocator::stop_following() noexcept {
  {
    std::lock_guard<std::mutex> lk(follow_mu_);
    stop_following_ = true;
  }
  follow_cv_.notify_all();
  follower_.stop();
}

}  // namespace fairlock::detail
