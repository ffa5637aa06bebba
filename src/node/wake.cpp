#include "node/wake.h"

#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <optional>

#include "base/retry_policy.h"
#include "fairlock/errors.h"
#include "net/call_deadline.h"
#include "node/failure.h"
#include "node/server.h"
#include "protocol/formats.h"

namespace fairlock::detail {

using std::chrono::milliseconds;

namespace {

// Thrown out of a session when the master changed (Wake::reconnect): not a
// failure, the subscriber moves at once.
struct MasterChanged {};

bool is_setup_failure(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return is_setup_error(x);
  } catch (...) {
    return false;
  }
}

}  // namespace

Wake::Wake(Server& server, WakeConfig config, WakeSink& sink, Counters& counters, spdlog::logger& log)
    : server_(server),
      config_(std::move(config)),
      sink_(sink),
      counters_(counters),
      log_(log),
      wake_channel_(wake_channel(config_.key_prefix, config_.client_id)) {}

Wake::~Wake() {
  stop();
  if (event_fd_ >= 0) ::close(event_fd_);
}

Notify Wake::start(bool wait) {
  if (config_.mode == Notify::keyspace && !keyspace_configured()) config_.mode = Notify::poll;
  if (config_.mode == Notify::poll) return Notify::poll;
  event_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (event_fd_ < 0) throw Error("fairlock: eventfd failed");
  thread_.start([this] { loop(); });
  if (config_.mode == Notify::publish && wait) {
    // Be subscribed before the first wait, so no early wake is lost.
    std::unique_lock<std::mutex> lk(mu_);
    if (!cv_.wait_for(lk, config_.confirm_timeout, [&] { return signals_ok_.load() || first_failure_; })) {
      log_.warn("fairlock: wake subscriber not ready; waiting polls until it is");
    }
    if (first_failure_ && !signals_ok_.load() && is_setup_failure(first_failure_)) {
      std::rethrow_exception(first_failure_);
    }
  }
  return config_.mode;
}

void Wake::stop() noexcept {
  stopping_.store(true);
  poke();
  {
    std::lock_guard<std::mutex> lk(mu_);
    cv_.notify_all();
  }
  // Called from a callback on our own thread: it ends by itself once it
  // returns (join() does not wait for itself).
  thread_.join();
}

bool Wake::keyspace_configured() {
  auto flags_ok = [](std::string_view v) {
    return v.find('K') != std::string_view::npos &&
           (v.find('$') != std::string_view::npos || v.find('A') != std::string_view::npos);
  };
  try {
    ReplyPtr r = server_.command({"CONFIG", "GET", "notify-keyspace-events"});
    std::string value(reply_string(reply_at(*r, 1)));
    if (!flags_ok(value) && config_.configure_keyspace_events) {
      std::string wanted = value;
      if (wanted.find('K') == std::string::npos) wanted += 'K';
      if (wanted.find('$') == std::string::npos && wanted.find('A') == std::string::npos) wanted += '$';
      server_.command({"CONFIG", "SET", "notify-keyspace-events", wanted});
      log_.info("fairlock: set notify-keyspace-events to '{}'", wanted);
      value = wanted;
    }
    if (flags_ok(value)) return true;
    log_.warn("fairlock: notify-keyspace-events is '{}', lacking K and $ (or A); falling back to polling", value);
  } catch (const std::exception& e) {
    if (failure_of(e) == CallFailure::wrong_setup) throw;
    log_.warn("fairlock: cannot check notify-keyspace-events ({}); falling back to polling", e.what());
  }
  return false;
}

// The subscriber's first try failed (called from its catch block): start()
// stops waiting for it, and throws it if it is a setup error (a
// certificate that does not verify, a wrong password), so that the
// Client's constructor does.
void Wake::note_first_failure() {
  if (started_once_) return;
  std::lock_guard<std::mutex> lk(mu_);
  if (!first_failure_) first_failure_ = std::current_exception();
  cv_.notify_all();
}

void Wake::poke() {
  if (event_fd_ < 0) return;
  std::uint64_t one = 1;
  ssize_t n = ::write(event_fd_, &one, sizeof one);
  (void)n;
}

std::string Wake::channel_of(const std::string& name) const {
  if (config_.sharded) return shard_channel(config_.key_prefix, name, config_.client_id);
  return keyspace_channel(server_.endpoint().db, config_.key_prefix, name, config_.client_id);
}

bool Wake::watch(const std::string& name, bool wait, const std::atomic<bool>* give_up) {
  std::unique_lock<std::mutex> lk(mu_);
  ++watched_[name];
  std::string channel = channel_of(name);
  channel_name_[channel] = name;
  if (!confirmed_.count(channel)) {
    refused_.erase(channel);  // one more try per wait (the slot may be back)
    poke();
    if (!wait) return false;
    const auto limit = CallDeadline::bound(config_.confirm_timeout);  // a timed wait's deadline comes first
    const auto given_up = [give_up] { return give_up != nullptr && give_up->load(); };
    const auto ended = [&] { return confirmed_.count(channel) > 0 || refused_.count(channel) > 0 || stopping_.load(); };
    if (!cv_.wait_for(lk, limit, [&] { return ended() || given_up(); })) {
      log_.warn("fairlock: wake subscription for {} not confirmed; this wait polls", name);
    }
  }
  return confirmed_.count(channel) > 0;
}

void Wake::reconnect() {
  reconnect_.store(true);
  poke();
}

void Wake::nudge() {
  { std::lock_guard<std::mutex> lk(mu_); }  // a watcher between its check and its wait gets the notify
  cv_.notify_all();
}

bool Wake::watching(const std::string& name) {
  std::lock_guard<std::mutex> lk(mu_);
  return confirmed_.count(channel_of(name)) > 0;
}

void Wake::unwatch(const std::string& name) {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = watched_.find(name);
  if (it == watched_.end()) return;
  // Stay subscribed while the name is idle (a later wait then costs no
  // SUBSCRIBE round trip); drop idle subscriptions only past a bound.
  --it->second;
  constexpr std::size_t kIdleSubscriptions = 1024;
  if (watched_.size() <= kIdleSubscriptions) return;
  for (auto w = watched_.begin(); w != watched_.end();) {
    if (w->second > 0) {
      ++w;
      continue;
    }
    refused_.erase(channel_of(w->first));
    channel_name_.erase(channel_of(w->first));
    w = watched_.erase(w);
  }
  poke();
}

// Nothing is subscribed any more: waiters poll until signals are back.
void Wake::unsubscribed() {
  signals_ok_.store(false);
  std::vector<std::string> names;  // sharded: the names watched here, whose signals were lost
  {
    std::lock_guard<std::mutex> lk(mu_);
    confirmed_.clear();
    refused_.clear();  // the next session asks again (after a failover, maybe of the new owner)
    if (config_.sharded) {
      for (const auto& [name, waits] : watched_) {
        if (waits > 0) names.push_back(name);
      }
    }
  }
  // Waiters switch to position-aware polling: every waiter, or on a
  // cluster only those of the names a wait watches on this node now (a
  // replica's, a dead seed's or a dead old master's subscriber, failing
  // again and again, wakes nobody: a wait watches its name where it is now).
  if (!config_.sharded) return sink_.recheck(nullptr);
  for (const std::string& name : names) sink_.recheck(&name);
}

// The backoff starts again from kResubscribeFirst only after a session
// that lasted kResubscribeMax from its connection (or a planned move to a
// new master): a server that takes the connection and drops it at once
// (maxclients reached, protected mode) is not hammered either.
void Wake::loop() {
  milliseconds backoff = retry::kResubscribeFirst;
  bool failed_before = false;
  while (!stopping_.load()) {
    std::optional<std::chrono::steady_clock::time_point> connected;
    try {
      std::unique_ptr<Connection> c = server_.connect();
      connected = std::chrono::steady_clock::now();
      if (failed_before) {
        counters_.add(&Stats::reconnects);
        log_.info("fairlock: wake subscriber reconnected");
      }
      session(*c);
    } catch (const MasterChanged&) {  // planned: subscribe on the new master now
      log_.info("fairlock: wake subscriber follows the new master");
      unsubscribed();
      failed_before = true;
      backoff = retry::kResubscribeFirst;
    } catch (const std::exception& e) {
      if (stopping_.load()) break;
      note_first_failure();
      if (signals_ok_.exchange(false) || !failed_before) {
        log_.warn("fairlock: wake subscriber down ({}); waiters poll until it is back", e.what());
      }
      failed_before = true;
      unsubscribed();
      if (connected && std::chrono::steady_clock::now() - *connected >= retry::kResubscribeMax) {
        backoff = retry::kResubscribeFirst;
      }
      std::unique_lock<std::mutex> lk(mu_);
      cv_.wait_for(lk, backoff, [&] { return stopping_.load(); });
      backoff = std::min(backoff * 2, retry::kResubscribeMax);
    }
  }
  signals_ok_.store(false);
}

// The channels to be subscribed now; forgets the confirmation of any other.
std::set<std::string> Wake::wanted() {
  std::set<std::string> want;
  std::lock_guard<std::mutex> lk(mu_);
  if (config_.mode == Notify::publish && !config_.sharded) want.insert(wake_channel_);
  for (const auto& [channel, name] : channel_name_) {
    if (!refused_.count(channel)) want.insert(channel);
  }
  for (auto it = confirmed_.begin(); it != confirmed_.end();) {
    it = want.count(*it) ? std::next(it) : confirmed_.erase(it);
  }
  return want;
}

// Subscribes to what is wanted now and drops what is not.
void Wake::sync(Connection& c) {
  const std::set<std::string> want = wanted();
  for (const auto& ch : want) {
    if (sent_.insert(ch).second) send(c, ch, true);
  }
  for (auto it = sent_.begin(); it != sent_.end();) {
    if (want.count(*it)) {
      ++it;
    } else {
      send(c, *it, false);
      it = sent_.erase(it);
    }
  }
  c.flush();
}

// Queues a (un)subscription; a sharded one's reply is then due (pending_).
void Wake::send(Connection& c, const std::string& channel, bool subscribe) {
  if (!config_.sharded) return c.append({subscribe ? "SUBSCRIBE" : "UNSUBSCRIBE", channel});
  c.append({subscribe ? "SSUBSCRIBE" : "SUNSUBSCRIBE", channel});
  pending_.emplace_back(subscribe, channel);
}

void Wake::session(Connection& c) {
  sent_.clear();
  pending_.clear();
  sync(c);
  if (per_name() && !signals_ok_.exchange(true)) {
    {
      std::lock_guard<std::mutex> lk(mu_);
      cv_.notify_all();  // start() waits for it (sharded mode)
    }
    sink_.recheck(nullptr);
  }
  pollfd fds[2] = {{c.fd(), POLLIN, 0}, {event_fd_, POLLIN, 0}};
  while (!stopping_.load()) {
    fds[0].revents = fds[1].revents = 0;
    int n = ::poll(fds, 2, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw ConnectionError("fairlock: poll failed");
    }
    if (fds[1].revents & POLLIN) {
      std::uint64_t v = 0;
      ssize_t got = ::read(event_fd_, &v, sizeof v);
      (void)got;
      if (stopping_.load()) return;
      if (reconnect_.exchange(false)) throw MasterChanged();
      sync(c);
    }
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      for (auto& r : c.read_available()) dispatch(*r);
    }
  }
}

}  // namespace fairlock::detail
