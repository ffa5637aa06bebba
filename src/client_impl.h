#pragma once
// Internals of fairlock::Client: connection pool, wake subscriber, heartbeat,
// and the registry of this process's live participants.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "connection.h"
#include "fairlock/client.h"
#include "fairlock/options.h"
#include "scripts.h"

namespace spdlog {
class logger;
}

namespace fairlock::detail {

class Participant;

struct Counters {
  std::atomic<std::uint64_t> grants{0}, waits{0}, timeouts{0}, cancels{0}, wakes_signal{0}, wakes_keyspace{0},
      wakes_timer{0}, wakes_heartbeat{0}, lost{0}, reconnects{0}, script_reloads{0}, heartbeats{0};
};

// A fixed-size pool of blocking connections, created lazily; a connection
// is used by one thread at a time and dropped when it breaks.
class Pool {
 public:
  Pool(Endpoint ep, const Options& o, Counters& counters, spdlog::logger& log);
  template <class F>
  auto with(F&& f) -> decltype(f(std::declval<Connection&>())) {
    std::unique_ptr<Connection> c = take();
    try {
      auto result = f(*c);
      give_back(std::move(c));
      return result;
    } catch (...) {
      give_back(std::move(c));
      throw;
    }
  }
  const Endpoint& endpoint() const { return ep_; }

 private:
  std::unique_ptr<Connection> take();
  void give_back(std::unique_ptr<Connection> c);
  Endpoint ep_;
  std::chrono::milliseconds connect_timeout_, command_timeout_;
  std::size_t size_;
  Counters& counters_;
  spdlog::logger& log_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Connection>> idle_;
  std::size_t open_ = 0;
  bool had_failure_ = false;
};

class ClientImpl {
 public:
  explicit ClientImpl(Options o);
  ~ClientImpl();
  ClientImpl(const ClientImpl&) = delete;
  ClientImpl& operator=(const ClientImpl&) = delete;

  void start();
  void shutdown() noexcept;
  bool stopped() const { return stopping_.load(); }
  void check_running() const;  // throws Error once shut down

  const Options& options() const { return opts_; }
  const std::string& id() const { return id_; }
  Notify mode() const { return mode_; }
  bool signals_ok() const { return signals_ok_.load(); }
  spdlog::logger& log() { return *log_; }
  Counters counters;

  // A fresh queue member: wake-mode char, client id, ':' and a 128-bit token.
  std::string new_member() const;
  std::chrono::milliseconds heartbeat_period() const;
  // One script call, one round trip; error replies are thrown typed.
  ReplyPtr run(Script s, const Keys& keys, std::vector<std::string> args);

  void enlist(const std::string& member, const std::shared_ptr<Participant>& p, std::chrono::milliseconds lease);
  void delist(const std::string& member);
  // Keyspace mode: subscribe to the name's wake channel; true once confirmed.
  bool watch(const std::string& name);
  void unwatch(const std::string& name);
  std::vector<NameSummary> list(const std::string& pattern);

 private:
  std::vector<std::shared_ptr<Participant>> participants();
  void heartbeat_loop();
  void beat();
  void subscriber_loop();
  void subscribe_session(Connection& c);
  void dispatch(const redisReply& r);
  void kick_all_waiters();
  std::string keyspace_channel(const std::string& name) const;
  void check_keyspace_config();
  void wake_subscriber();

  Options opts_;
  std::shared_ptr<spdlog::logger> log_;
  std::string id_;
  Notify mode_;
  std::unique_ptr<Pool> pool_;
  std::unique_ptr<Pool> hb_pool_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> signals_ok_{false};
  std::string wake_channel_;

  std::mutex reg_mu_;
  std::map<std::string, std::weak_ptr<Participant>> members_;

  std::mutex hb_mu_;
  std::condition_variable hb_cv_;
  bool hb_poke_ = false;
  std::thread hb_thread_;

  // Subscriber state, guarded by sub_mu_.
  std::mutex sub_mu_;
  std::condition_variable sub_cv_;
  std::map<std::string, int> watched_;               // name -> refcount (keyspace)
  std::map<std::string, std::string> channel_name_;  // keyspace channel -> name
  std::set<std::string> confirmed_;                  // channels subscribed now
  bool sub_dirty_ = false;
  int event_fd_ = -1;
  std::thread sub_thread_;
  bool started_once_ = false;  // subscriber thread only
  std::atomic<long long> min_lease_ms_{2147483647};
  std::mutex join_mu_;
};

}  // namespace fairlock::detail
