#include <hiredis/hiredis.h>
#include <poll.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <stdexcept>

#include "client_impl.h"
#include "fairlock/errors.h"
#include "participant.h"

namespace fairlock {
namespace detail {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

namespace {

std::string random_hex(std::size_t bytes) {
  unsigned char buf[32];
  std::size_t got = 0;
  while (got < bytes) {
    ssize_t n = getrandom(buf + got, bytes - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error("fairlock: getrandom failed");
    }
    got += static_cast<std::size_t>(n);
  }
  static const char* digits = "0123456789abcdef";
  std::string out;
  out.reserve(bytes * 2);
  for (std::size_t i = 0; i < bytes; ++i) {
    out.push_back(digits[buf[i] >> 4]);
    out.push_back(digits[buf[i] & 15]);
  }
  return out;
}

void check_positive(std::chrono::milliseconds v, const char* what) {
  if (v.count() <= 0) throw std::invalid_argument(std::string(what) + ": must be positive");
  if (v.count() > 2147483647) throw std::invalid_argument(std::string(what) + ": at most 2147483647 ms");
}

Options validated(Options o) {
  parse_url(o.url);
  if (o.key_prefix.empty()) throw std::invalid_argument("key_prefix: must not be empty");
  if (o.key_prefix.size() > 128) throw std::invalid_argument("key_prefix: longer than 128 bytes");
  if (o.key_prefix.find_first_of("{}") != std::string::npos) {
    throw std::invalid_argument("key_prefix: must not contain '{' or '}'");
  }
  check_positive(o.connect_timeout, "connect_timeout");
  check_positive(o.command_timeout, "command_timeout");
  check_positive(o.liveness_ttl, "liveness_ttl");
  if (o.liveness_ttl.count() < 30) throw std::invalid_argument("liveness_ttl: at least 30 ms");
  if (o.pool_size < 1 || o.pool_size > 1024) throw std::invalid_argument("pool_size: must be in [1, 1024]");
  return o;
}

}  // namespace

// ---------------------------------------------------------------- Pool

Pool::Pool(Endpoint ep, const Options& o, Counters& counters, spdlog::logger& log)
    : ep_(std::move(ep)),
      connect_timeout_(o.connect_timeout),
      command_timeout_(o.command_timeout),
      size_(o.pool_size),
      counters_(counters),
      log_(log) {}

std::unique_ptr<Connection> Pool::take() {
  std::unique_lock<std::mutex> lk(mu_);
  if (!cv_.wait_for(lk, command_timeout_, [&] { return !idle_.empty() || open_ < size_; })) {
    throw TimeoutError("fairlock: no free connection within command_timeout");
  }
  while (!idle_.empty()) {
    auto c = std::move(idle_.back());
    idle_.pop_back();
    if (c->idle_and_open()) return c;
    // Closed while idle (server restarted, CLIENT KILL): a command sent on
    // it would fail although the server is up. Open a fresh one instead.
    --open_;
    had_failure_ = true;
    log_.info("fairlock: an idle redis connection was closed by the server; reconnecting");
  }
  ++open_;
  lk.unlock();
  try {
    auto c = std::make_unique<Connection>(ep_, connect_timeout_, command_timeout_);
    lk.lock();
    if (had_failure_) {
      had_failure_ = false;
      counters_.reconnects.fetch_add(1, std::memory_order_relaxed);
      log_.info("fairlock: reconnected to redis");
    }
    return c;
  } catch (...) {
    lk.lock();
    --open_;
    had_failure_ = true;
    cv_.notify_one();
    throw;
  }
}

void Pool::give_back(std::unique_ptr<Connection> c) {
  std::lock_guard<std::mutex> lk(mu_);
  if (c->broken()) {
    --open_;
    had_failure_ = true;
    log_.warn("fairlock: dropped a broken redis connection");
  } else {
    idle_.push_back(std::move(c));
  }
  cv_.notify_one();
}

// ---------------------------------------------------------------- ClientImpl

ClientImpl::ClientImpl(Options o)
    : opts_(validated(std::move(o))),
      log_(opts_.logger
               ? opts_.logger
               : std::make_shared<spdlog::logger>("fairlock", std::make_shared<spdlog::sinks::null_sink_mt>())),
      id_(random_hex(8)),
      mode_(opts_.notify) {
  pool_ = std::make_unique<Pool>(parse_url(opts_.url), opts_, counters, *log_);
  Options one = opts_;
  one.pool_size = 1;  // the heartbeat's own connection: busy commands never delay it
  hb_pool_ = std::make_unique<Pool>(parse_url(opts_.url), one, counters, *log_);
  wake_channel_ = opts_.key_prefix + ":wake:" + id_;
}

ClientImpl::~ClientImpl() {
  shutdown();
  if (event_fd_ >= 0) ::close(event_fd_);
}

void ClientImpl::check_running() const {
  if (stopping_.load()) throw Error("fairlock: the client is shut down");
}

std::string ClientImpl::new_member() const {
  char mode = mode_ == Notify::publish ? 'p' : mode_ == Notify::keyspace ? 'k' : 'n';
  return mode + id_ + ":" + random_hex(16);
}

std::chrono::milliseconds ClientImpl::heartbeat_period() const {
  long long base = std::min<long long>(opts_.liveness_ttl.count(), min_lease_ms_.load());
  return milliseconds(std::max(10LL, base / 3));
}

ReplyPtr ClientImpl::run(Script s, const Keys& keys, std::vector<std::string> args) {
  std::vector<ScriptCall> calls{ScriptCall{s, &keys, std::move(args)}};
  auto replies = pool_->with([&](Connection& c) { return run_scripts(c, calls, counters.script_reloads); });
  ReplyPtr r = std::move(replies.front());
  if (is_error(*r)) throw_reply_error(*r, std::string("fairlock ") + script_name(s));
  return r;
}

void ClientImpl::start() {
  event_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (event_fd_ < 0) throw Error("fairlock: eventfd failed");
  if (mode_ == Notify::keyspace) check_keyspace_config();
  hb_thread_ = std::thread([this] { heartbeat_loop(); });
  if (mode_ != Notify::poll) {
    sub_thread_ = std::thread([this] { subscriber_loop(); });
    if (mode_ == Notify::publish) {
      // Be subscribed before the first wait, so no early wake is lost.
      std::unique_lock<std::mutex> lk(sub_mu_);
      if (!sub_cv_.wait_for(lk, opts_.connect_timeout, [&] { return signals_ok_.load(); })) {
        log_->warn("fairlock: wake subscriber not ready; waiting polls until it is");
      }
    }
  }
  log_->info("fairlock: client {} started ({} mode)", id_,
             mode_ == Notify::publish    ? "publish"
             : mode_ == Notify::keyspace ? "keyspace"
                                         : "poll");
}

void ClientImpl::check_keyspace_config() {
  auto flags_ok = [](std::string_view v) {
    return v.find('K') != std::string_view::npos &&
           (v.find('$') != std::string_view::npos || v.find('A') != std::string_view::npos);
  };
  try {
    std::string value = pool_->with([](Connection& c) {
      ReplyPtr r = c.command({"CONFIG", "GET", "notify-keyspace-events"});
      return std::string(reply_string(reply_at(*r, 1)));
    });
    if (!flags_ok(value) && opts_.configure_keyspace_events) {
      std::string wanted = value;
      if (wanted.find('K') == std::string::npos) wanted += 'K';
      if (wanted.find('$') == std::string::npos && wanted.find('A') == std::string::npos) wanted += '$';
      pool_->with([&](Connection& c) {
        ReplyPtr r = c.command({"CONFIG", "SET", "notify-keyspace-events", wanted});
        if (is_error(*r)) throw_reply_error(*r, "CONFIG SET");
        return 0;
      });
      log_->info("fairlock: set notify-keyspace-events to '{}'", wanted);
      value = wanted;
    }
    if (flags_ok(value)) return;
    log_->warn("fairlock: notify-keyspace-events is '{}', lacking K and $ (or A); falling back to polling", value);
  } catch (const std::exception& e) {
    log_->warn("fairlock: cannot check notify-keyspace-events ({}); falling back to polling", e.what());
  }
  mode_ = Notify::poll;
}

void ClientImpl::shutdown() noexcept {
  if (!stopping_.exchange(true)) {
    std::vector<ScriptCall> releases;
    std::vector<std::shared_ptr<Participant>> held;
    for (auto& p : participants()) {
      if (auto member = p->on_shutdown()) {
        held.push_back(p);
        releases.push_back(ScriptCall{Script::release, &p->keys(), {*member, std::to_string(p->permits())}});
      }
    }
    if (!releases.empty()) {
      try {
        pool_->with([&](Connection& c) { return run_scripts(c, releases, counters.script_reloads); });
      } catch (const std::exception& e) {
        log_->warn("fairlock: releasing grants at shutdown failed (they expire with their leases): {}", e.what());
      }
    }
    {
      std::lock_guard<std::mutex> lk(hb_mu_);
      hb_cv_.notify_all();
    }
    wake_subscriber();
    {
      std::lock_guard<std::mutex> lk(sub_mu_);
      sub_cv_.notify_all();
    }
  }
  // Called from a callback on one of our own threads: that thread ends by
  // itself once it returns; joining it here would deadlock.
  std::lock_guard<std::mutex> lk(join_mu_);
  for (std::thread* t : {&hb_thread_, &sub_thread_}) {
    if (t->joinable() && t->get_id() != std::this_thread::get_id()) t->join();
  }
}

std::vector<NameSummary> ClientImpl::list(const std::string& pattern) {
  // Every active name has its g key; match "<prefix>:{<pattern>}:g" with the
  // prefix's glob characters escaped.
  std::string match;
  for (char c : opts_.key_prefix) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') match.push_back('\\');
    match.push_back(c);
  }
  match += ":{" + pattern + "}:g";
  const std::string head = opts_.key_prefix + ":{";
  std::vector<NameSummary> out;
  std::set<std::string> seen;
  std::string cursor = "0";
  do {
    std::vector<std::string> found;
    pool_->with([&](Connection& c) {
      ReplyPtr r = c.command({"SCAN", cursor, "MATCH", match, "COUNT", "1000"});
      if (is_error(*r)) throw_reply_error(*r, "SCAN");
      cursor = std::string(reply_string(reply_at(*r, 0)));
      const auto& keys = reply_at(*r, 1);
      for (std::size_t i = 0; i < reply_size(keys); ++i) found.emplace_back(reply_string(reply_at(keys, i)));
      return 0;
    });
    for (const auto& k : found) {
      if (k.size() < head.size() + 3 || k.compare(0, head.size(), head) != 0) continue;
      std::string name = k.substr(head.size(), k.size() - head.size() - 3);
      if (seen.insert(name).second) out.push_back(NameSummary{name, 0, 0});
    }
  } while (cursor != "0");
  if (out.empty()) return out;
  std::vector<Argv> counts;
  std::vector<Keys> keys;
  keys.reserve(out.size());
  for (const auto& n : out) {
    keys.emplace_back(opts_.key_prefix, n.name);
    counts.push_back({"ZCARD", keys.back().h});
    counts.push_back({"ZCARD", keys.back().q});
  }
  auto replies = pool_->with([&](Connection& c) { return c.pipeline(counts); });
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i].holders = static_cast<std::size_t>(reply_integer(*replies[2 * i]));
    out[i].waiters = static_cast<std::size_t>(reply_integer(*replies[2 * i + 1]));
  }
  return out;
}

// ---------------------------------------------------------------- registry

void ClientImpl::enlist(const std::string& member, const std::shared_ptr<Participant>& p,
                        std::chrono::milliseconds lease) {
  {
    std::lock_guard<std::mutex> lk(reg_mu_);
    members_[member] = p;
  }
  long long seen = min_lease_ms_.load();
  while (lease.count() < seen && !min_lease_ms_.compare_exchange_weak(seen, lease.count())) {
  }
  if (lease.count() < seen) {
    std::lock_guard<std::mutex> lk(hb_mu_);
    hb_poke_ = true;
    hb_cv_.notify_all();
  }
}

void ClientImpl::delist(const std::string& member) {
  std::lock_guard<std::mutex> lk(reg_mu_);
  members_.erase(member);
}

std::vector<std::shared_ptr<Participant>> ClientImpl::participants() {
  std::vector<std::shared_ptr<Participant>> out;
  std::lock_guard<std::mutex> lk(reg_mu_);
  out.reserve(members_.size());
  for (auto it = members_.begin(); it != members_.end();) {
    if (auto p = it->second.lock()) {
      out.push_back(std::move(p));
      ++it;
    } else {
      it = members_.erase(it);
    }
  }
  return out;
}

void ClientImpl::kick_all_waiters() {
  for (auto& p : participants()) p->kick();
}

// ---------------------------------------------------------------- heartbeat

void ClientImpl::heartbeat_loop() {
  std::unique_lock<std::mutex> lk(hb_mu_);
  auto next = steady_clock::now() + heartbeat_period();
  while (!stopping_.load()) {
    bool woken = hb_cv_.wait_until(lk, next, [&] { return stopping_.load() || hb_poke_; });
    if (stopping_.load()) break;
    if (woken) {  // a shorter lease appeared: maybe beat sooner
      hb_poke_ = false;
      next = std::min(next, steady_clock::now() + heartbeat_period());
      continue;
    }
    lk.unlock();
    try {
      beat();
    } catch (const std::exception& e) {
      log_->warn("fairlock: heartbeat failed: {}", e.what());
    }
    lk.lock();
    next = steady_clock::now() + heartbeat_period();
  }
}

void ClientImpl::beat() {
  struct Group {
    std::vector<std::pair<std::shared_ptr<Participant>, Participant::Beat>> members;
    std::size_t call = 0;
  };
  std::map<std::string, Group> groups;
  std::vector<ScriptCall> calls;
  const auto now = steady_clock::now();
  for (auto& p : participants()) {
    auto item = p->beat_item(now);
    if (!item) continue;
    auto [it, fresh] = groups.try_emplace(p->name());
    if (fresh) {
      it->second.call = calls.size();
      calls.push_back(ScriptCall{
          Script::heartbeat, &p->keys(), {std::to_string(p->permits()), std::to_string(opts_.liveness_ttl.count())}});
    }
    auto& args = calls[it->second.call].args;
    args.push_back(item->member);
    args.push_back(std::to_string(item->lease_ms));
    it->second.members.emplace_back(p, std::move(*item));
  }
  if (calls.empty()) return;
  const auto sent_at = steady_clock::now();
  // One pipelined round trip for every name this process waits on or holds.
  std::vector<ReplyPtr> replies;
  try {
    replies = hb_pool_->with([&](Connection& c) { return run_scripts(c, calls, counters.script_reloads); });
  } catch (const std::exception& e) {
    for (auto& [name, group] : groups) {
      for (auto& [p, item] : group.members) p->on_beat_error(item, e.what());
    }
    throw;
  }
  counters.heartbeats.fetch_add(1, std::memory_order_relaxed);
  for (auto& [name, group] : groups) {
    const redisReply& r = *replies[group.call];
    if (is_error(r)) {
      std::string error(r.str, r.len);
      log_->warn("fairlock: heartbeat of {} failed: {}", name, error);
      for (auto& [p, item] : group.members) p->on_beat_error(item, error);
      continue;
    }
    for (std::size_t i = 0; i < group.members.size(); ++i) {
      long long status = reply_integer(reply_at(r, 2 * i));
      long long value = reply_integer(reply_at(r, 2 * i + 1));
      group.members[i].first->on_beat(group.members[i].second, status, value, sent_at);
    }
  }
}

// ---------------------------------------------------------------- subscriber

void ClientImpl::wake_subscriber() {
  if (event_fd_ < 0) return;
  std::uint64_t one = 1;
  ssize_t n = ::write(event_fd_, &one, sizeof one);
  (void)n;
}

std::string ClientImpl::keyspace_channel(const std::string& name) const {
  return "__keyspace@" + std::to_string(pool_->endpoint().db) + "__:" + opts_.key_prefix + ":{" + name +
         "}:wake:" + id_;
}

bool ClientImpl::watch(const std::string& name) {
  std::unique_lock<std::mutex> lk(sub_mu_);
  ++watched_[name];
  std::string channel = keyspace_channel(name);
  channel_name_[channel] = name;
  if (!confirmed_.count(channel)) {
    sub_dirty_ = true;
    wake_subscriber();
    if (!sub_cv_.wait_for(lk, opts_.connect_timeout,
                          [&] { return confirmed_.count(channel) > 0 || stopping_.load(); })) {
      log_->warn("fairlock: keyspace subscription for {} not confirmed; this wait polls", name);
    }
  }
  return confirmed_.count(channel) > 0;
}

void ClientImpl::unwatch(const std::string& name) {
  std::lock_guard<std::mutex> lk(sub_mu_);
  auto it = watched_.find(name);
  if (it == watched_.end()) return;
  // Stay subscribed while the name is idle (a later wait then costs no
  // SUBSCRIBE round trip); drop idle subscriptions only past a bound.
  --it->second;
  constexpr std::size_t kIdleSubscriptions = 1024;
  if (watched_.size() > kIdleSubscriptions) {
    for (auto w = watched_.begin(); w != watched_.end();) {
      w = w->second == 0 ? watched_.erase(w) : std::next(w);
    }
    sub_dirty_ = true;
    wake_subscriber();
  }
}

void ClientImpl::subscriber_loop() {
  milliseconds backoff(50);
  bool failed_before = false;
  while (!stopping_.load()) {
    try {
      Connection c(pool_->endpoint(), opts_.connect_timeout, opts_.command_timeout);
      if (failed_before) {
        counters.reconnects.fetch_add(1, std::memory_order_relaxed);
        log_->info("fairlock: wake subscriber reconnected");
      }
      backoff = milliseconds(50);
      subscribe_session(c);
    } catch (const std::exception& e) {
      if (stopping_.load()) break;
      if (signals_ok_.exchange(false) || !failed_before) {
        log_->warn("fairlock: wake subscriber down ({}); waiters poll until it is back", e.what());
      }
      failed_before = true;
      {
        std::lock_guard<std::mutex> lk(sub_mu_);
        confirmed_.clear();
      }
      kick_all_waiters();  // they switch to position-aware polling
      std::unique_lock<std::mutex> lk(sub_mu_);
      sub_cv_.wait_for(lk, backoff, [&] { return stopping_.load(); });
      backoff = std::min(backoff * 2, milliseconds(2000));
    }
  }
  signals_ok_.store(false);
}

void ClientImpl::subscribe_session(Connection& c) {
  std::set<std::string> sent;
  auto sync = [&] {
    std::set<std::string> want;
    {
      std::lock_guard<std::mutex> lk(sub_mu_);
      sub_dirty_ = false;
      if (mode_ == Notify::publish) want.insert(wake_channel_);
      for (const auto& [name, count] : watched_) want.insert(keyspace_channel(name));
      for (auto it = confirmed_.begin(); it != confirmed_.end();) {
        it = want.count(*it) ? std::next(it) : confirmed_.erase(it);
      }
    }
    for (const auto& ch : want) {
      if (sent.insert(ch).second) c.append({"SUBSCRIBE", ch});
    }
    for (auto it = sent.begin(); it != sent.end();) {
      if (want.count(*it)) {
        ++it;
      } else {
        c.append({"UNSUBSCRIBE", *it});
        it = sent.erase(it);
      }
    }
    c.flush();
  };
  sync();
  if (mode_ == Notify::keyspace && !signals_ok_.exchange(true)) kick_all_waiters();
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
      sync();
    }
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      for (auto& r : c.read_available()) dispatch(*r);
    }
  }
}

void ClientImpl::dispatch(const redisReply& r) {
  if (!is_array(r) || r.elements < 3) return;
  std::string_view kind = reply_string(reply_at(r, 0));
  std::string channel(reply_string(reply_at(r, 1)));
  if (kind == "subscribe") {
    bool was_ok = true;
    {
      std::lock_guard<std::mutex> lk(sub_mu_);
      confirmed_.insert(channel);
      if (channel == wake_channel_) was_ok = signals_ok_.exchange(true);
      sub_cv_.notify_all();
    }
    if (!was_ok && started_once_) kick_all_waiters();  // a wake may have been lost meanwhile
    if (channel == wake_channel_) started_once_ = true;
    return;
  }
  if (kind != "message") return;
  std::string_view payload = reply_string(reply_at(r, 2));
  if (channel == wake_channel_) {
    auto space = payload.find(' ');
    if (space == std::string_view::npos) return;
    std::string member(payload.substr(0, space));
    std::string_view digits = payload.substr(space + 1);
    if (digits.empty() || digits.size() > 16 || digits.find_first_not_of("0123456789") != std::string_view::npos) {
      return;  // not a fence: not from a fairlock script
    }
    std::uint64_t fence = std::strtoull(std::string(digits).c_str(), nullptr, 10);
    std::shared_ptr<Participant> p;
    {
      std::lock_guard<std::mutex> lk(reg_mu_);
      auto it = members_.find(member);
      if (it != members_.end()) p = it->second.lock();
    }
    if (p) p->on_signal(member, fence);
    return;
  }
  if (payload != "set") return;
  std::string name;
  {
    std::lock_guard<std::mutex> lk(sub_mu_);
    auto it = channel_name_.find(channel);
    if (it == channel_name_.end()) return;
    name = it->second;
  }
  // Grants follow ticket order, so the grantee is our earliest waiter there.
  std::shared_ptr<Participant> first;
  std::uint64_t best = 0;
  for (auto& p : participants()) {
    if (p->name() != name) continue;
    auto t = p->waiting_ticket();
    if (t && (!first || *t < best)) {
      first = p;
      best = *t;
    }
  }
  counters.wakes_keyspace.fetch_add(1, std::memory_order_relaxed);  // before the waiter runs on
  if (first) {
    first->kick();
    return;
  }
  // Nobody eligible (a waiter's first reply is still in flight, or all are
  // already asking): ask every waiter there rather than drop the event.
  for (auto& p : participants()) {
    if (p->name() == name) p->kick();
  }
}

}  // namespace detail

// ---------------------------------------------------------------- Client

Client::Client(Options options) : impl_(std::make_shared<detail::ClientImpl>(std::move(options))) { impl_->start(); }

Client::~Client() { impl_->shutdown(); }

void Client::shutdown() noexcept { impl_->shutdown(); }

const Options& Client::options() const { return impl_->options(); }

const std::string& Client::id() const { return impl_->id(); }

Notify Client::notify_mode() const { return impl_->mode(); }

QueueState Client::inspect(const std::string& name, std::size_t max_waiters) {
  impl_->check_running();
  detail::Keys keys(impl_->options().key_prefix, name);
  std::size_t limit = std::min<std::size_t>(max_waiters, 100000);
  detail::ReplyPtr r = impl_->run(detail::Script::inspect, keys, {std::to_string(limit)});
  using detail::reply_at;
  using detail::reply_integer;
  using detail::reply_size;
  using detail::reply_string;
  using std::chrono::milliseconds;
  QueueState st;
  st.name = name;
  st.server_time_ms = reply_integer(reply_at(*r, 0));
  st.permits = static_cast<std::uint32_t>(reply_integer(reply_at(*r, 1)));
  st.last_fence = static_cast<std::uint64_t>(reply_integer(reply_at(*r, 2)));
  st.holder_count = static_cast<std::size_t>(reply_integer(reply_at(*r, 3)));
  st.waiter_count = static_cast<std::size_t>(reply_integer(reply_at(*r, 4)));
  const auto& h = reply_at(*r, 5);
  for (std::size_t i = 0; i + 3 < reply_size(h); i += 4) {
    st.holders.push_back(HolderInfo{
        std::string(reply_string(reply_at(h, i))), static_cast<std::uint64_t>(reply_integer(reply_at(h, i + 1))),
        milliseconds(reply_integer(reply_at(h, i + 2))), milliseconds(reply_integer(reply_at(h, i + 3)))});
  }
  const auto& w = reply_at(*r, 6);
  for (std::size_t i = 0; i + 3 < reply_size(w); i += 4) {
    st.waiters.push_back(WaiterInfo{
        std::string(reply_string(reply_at(w, i))), i / 4, static_cast<std::uint64_t>(reply_integer(reply_at(w, i + 1))),
        milliseconds(reply_integer(reply_at(w, i + 2))), milliseconds(reply_integer(reply_at(w, i + 3)))});
  }
  return st;
}

Evicted Client::evict(const std::string& name, const std::string& token) {
  impl_->check_running();
  detail::Keys keys(impl_->options().key_prefix, name);
  std::string permits = "1";
  detail::ReplyPtr r = impl_->run(detail::Script::evict, keys, {token, permits});
  switch (detail::reply_integer(*r)) {
    case 1: return Evicted::holder;
    case 2: return Evicted::waiter;
    default: return Evicted::none;
  }
}

std::vector<NameSummary> Client::list(const std::string& pattern) {
  impl_->check_running();
  return impl_->list(pattern);
}

Stats Client::stats() const {
  const auto& c = impl_->counters;
  auto get = [](const std::atomic<std::uint64_t>& v) { return v.load(std::memory_order_relaxed); };
  Stats s;
  s.grants = get(c.grants);
  s.waits = get(c.waits);
  s.timeouts = get(c.timeouts);
  s.cancels = get(c.cancels);
  s.wakes_signal = get(c.wakes_signal);
  s.wakes_keyspace = get(c.wakes_keyspace);
  s.wakes_timer = get(c.wakes_timer);
  s.wakes_heartbeat = get(c.wakes_heartbeat);
  s.lost = get(c.lost);
  s.reconnects = get(c.reconnects);
  s.script_reloads = get(c.script_reloads);
  s.heartbeats = get(c.heartbeats);
  return s;
}

}  // namespace fairlock
