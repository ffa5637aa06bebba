#pragma once
// One Redis server: its command pool, its heartbeat connection and dedicated
// connections (the wake subscriber). Every Redis access goes through here.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "base/counters.h"
#include "net/connection.h"
#include "net/pool.h"
#include "node/eviction_check.h"
#include "node/redirect.h"
#include "node/registration.h"
#include "node/script_runner.h"
#include "protocol/scripts.h"

namespace spdlog {
class logger;
}

namespace fairlock::detail {

// Which connections a call uses: the heartbeat has its own, so that waits
// that fill the command pool never delay it.
enum class Lane { commands, heartbeat };

// How a client uses each server (from its Options).
struct ServerConfig {
  std::size_t pool_size;  // command connections
  ScriptWay way;          // the first way to run the scripts
  bool allow_evicting;    // Options::allow_evicting_server
  // This client's registration (docs/PROTOCOL.md "Who"): key, value, expiry.
  std::string who_key;
  std::string who_value;
  std::chrono::milliseconds who_expiry;
  // A server of a cluster: who follows its -MOVED and -ASK replies (and
  // says whether the registration's slot is this server's: it is written
  // on that one server only).
  Redirects* redirects = nullptr;
};

class Server {
 public:
  Server(Target target, const ServerConfig& config, Counters& counters, spdlog::logger& log);

  // Opens a command connection now rather than at the first call, so that
  // its checks run: throws what asking again cannot cure (is_setup_error:
  // EvictionPolicyError, AccessDenied, a TLS setup that cannot work). Any
  // other failure (unreachable now) is left to the first call: false.
  // Writes the client's registration on it.
  bool open();
  // Deletes the client's registration (best effort; once), waiting at most
  // kUnregisterBound.
  static constexpr std::chrono::milliseconds kUnregisterBound{500};
  void unregister() noexcept;
  // The registration's refresh alone, on the heartbeat lane, if it is due
  // and this server keeps it: on a cluster, its slot's master may hold none
  // of the client's claims, so no call there carries the refresh.
  void keep_registered() noexcept;
  // One script call; an error reply is returned in place.
  ReplyPtr run_one(ScriptCall call);
  // Script calls in one round trip; error replies are left in place. On the
  // heartbeat lane, the registration's refresh rides along when due. Plain
  // commands in `tail` follow the calls on the same connection (a WAIT:
  // node/sync_wait.h); their replies follow the calls'. In a cluster, a
  // lone call redirected is sent where it was redirected (kMaxRedirects
  // times at most); in a batch, a -MOVED only teaches the slot's new owner.
  static constexpr int kMaxRedirects = 3;
  std::vector<ReplyPtr> run_batch(const std::vector<ScriptCall>& calls, Lane lane, const std::vector<Argv>& tail = {});
  // A plain command; an error reply is thrown typed.
  ReplyPtr command(const Argv& argv);
  std::vector<ReplyPtr> pipeline(const std::vector<Argv>& commands);
  // A connection of its own (the subscriber's).
  std::unique_ptr<Connection> connect() const;
  const Endpoint& endpoint() const { return target_.endpoint; }
  // Through Sentinel: the sentinels asked every second on a thread of the
  // locator's (MasterLocator::follow), until stop_following().
  void start_following();
  void stop_following() noexcept;
  // "host:port", or through Sentinel "the master of 'name'", for messages.
  std::string where() const;
  // This client has opened a connection to it before (Pool::reached),
  // through Sentinel a sentinel named its master, or on a cluster a node
  // gave the slot map (Redirects::mapped): a failure to connect is then the
  // server going away (a failover under way), which waits ride out. Only a
  // deployment no part of which ever answered fails a first call at once.
  bool reached() const noexcept;

 private:
  std::vector<ReplyPtr> run_here(const std::vector<ScriptCall>& calls, Lane lane, const std::vector<Argv>& tail,
                                 bool asking);
  std::vector<ReplyPtr> run_noted(const std::vector<ScriptCall>& calls, Lane lane, const std::vector<Argv>& tail,
                                  bool asking);
  std::vector<ReplyPtr> follow(const std::vector<ScriptCall>& calls, Lane lane, const std::vector<Argv>& tail,
                               std::vector<ReplyPtr> replies, int hops);
  bool registers_here();
  std::vector<ReplyPtr> run_riding(Connection& c, const std::vector<ScriptCall>& calls, const std::vector<Argv>& tail);
  std::vector<ReplyPtr> master_only(Connection& c, std::vector<ReplyPtr> replies);
  const Target target_;
  Redirects* const redirects_;
  const std::uint16_t who_slot_;  // of the registration's key
  Counters& counters_;
  Registration registration_;
  EvictionCheck eviction_;  // before the pools, which run it on each new connection
  ScriptRunner scripts_;
  Pool commands_;
  Pool heartbeat_;
};

}  // namespace fairlock::detail
