#pragma once
// The wake subscriber of one server: it listens for the grants that scripts
// signal to this process and reports only two things to its sink.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "base/counters.h"
#include "base/owned_thread.h"
#include "fairlock/options.h"

namespace spdlog {
class logger;
}
struct redisReply;

namespace fairlock::detail {

class Connection;
class Server;

class WakeSink {
 public:
  virtual ~WakeSink() = default;
  // `member` was granted with `fence` (a PUBLISH or SPUBLISH wake).
  virtual void granted(const std::string& member, std::uint64_t fence) = 0;
  // Waiters of `name` should ask Redis again (a keyspace event, or its
  // sharded subscription ended here); with no name, every waiter should
  // (signals were down and may have been lost).
  virtual void recheck(const std::string* name) = 0;
};

struct WakeConfig {
  Notify mode;
  std::string key_prefix;
  std::string client_id;
  std::chrono::milliseconds confirm_timeout;  // how long a subscription may take
  bool configure_keyspace_events;
  // Publish mode on Redis Cluster: grants come by SPUBLISH on the shard
  // channel of each name (members of mode 's'), subscribed per name like
  // keyspace mode (watch) with SSUBSCRIBE on this node; no process-wide
  // channel. The node may stop serving the name's slot: then the name is
  // unconfirmed here, its waiters poll and are told to recheck.
  bool sharded = false;
};

class Wake {
 public:
  Wake(Server& server, WakeConfig config, WakeSink& sink, Counters& counters, spdlog::logger& log);
  ~Wake();
  Wake(const Wake&) = delete;
  Wake& operator=(const Wake&) = delete;

  // Starts listening; returns the mode in effect (keyspace falls back to
  // poll when the server's notify-keyspace-events lack K and $). Publish
  // mode waits until subscribed, at most confirm_timeout, unless `wait` is
  // false, or until the subscriber's first try fails: a setup error
  // (is_setup_error) is thrown; otherwise waiters poll until it is back.
  Notify start(bool wait = true);
  void stop() noexcept;
  // Signals arrive now: a waiter may sleep on them (with a bounded timer).
  bool signals_ok() const { return signals_ok_.load(); }
  // Grants are signalled per name (keyspace, or sharded publish): a wait
  // watches its name, and may sleep on signals only while watching() it.
  bool per_name() const { return config_.mode == Notify::keyspace || config_.sharded; }
  bool sharded() const { return config_.sharded; }
  // Keyspace or sharded mode: subscribe to the name's wake channel (again,
  // if this node refused it before); true once confirmed
  // (waits up to confirm_timeout for that unless `wait` is false; less if
  // the calling thread's CallDeadline is nearer, or once `give_up` is set
  // and nudge() called: the wait then polls).
  bool watch(const std::string& name, bool wait = true, const std::atomic<bool>* give_up = nullptr);
  // Has the threads waiting in watch() look at their give_up flag again.
  void nudge();
  // The master changed (Sentinel): subscribe again, on the new one; the
  // sink is told to recheck once subscribed (as after any reconnection).
  void reconnect();
  // The name's wake channel is subscribed now.
  bool watching(const std::string& name);
  void unwatch(const std::string& name);

 private:
  bool keyspace_configured();
  void loop();
  void note_first_failure();
  void unsubscribed();
  void session(Connection& c);
  std::set<std::string> wanted();
  void sync(Connection& c);
  void send(Connection& c, const std::string& channel, bool subscribe);
  void dispatch(const redisReply& r);
  void dispatch_sharded(const redisReply& r);
  void refused(const std::string& channel, std::string_view why);
  void confirmed(const std::string& channel);
  void poke();
  std::string channel_of(const std::string& name) const;

  Server& server_;
  WakeConfig config_;
  WakeSink& sink_;
  Counters& counters_;
  spdlog::logger& log_;
  const std::string wake_channel_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> signals_ok_{false};
  std::atomic<bool> reconnect_{false};
  bool started_once_ = false;         // subscriber thread only
  std::exception_ptr first_failure_;  // of the subscriber's first try, if it failed (guarded by mu_)
  int event_fd_ = -1;
  OwnedThread thread_;
  // The subscriber thread's own, per session: the channels asked for, and
  // (sharded) the (un)subscriptions whose replies are due, in order: true
  // for SSUBSCRIBE.
  std::set<std::string> sent_;
  std::deque<std::pair<bool, std::string>> pending_;

  // Subscriptions, guarded by mu_.
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, int> watched_;               // name -> waits on it (keyspace)
  std::map<std::string, std::string> channel_name_;  // keyspace channel -> name, of watched_ names
  std::set<std::string> confirmed_;                  // channels subscribed now
  std::set<std::string> refused_;  // sharded channels this node refused or ended: not asked again but by watch()
};

}  // namespace fairlock::detail
