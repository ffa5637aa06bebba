#pragma once
// Which server is the master now, asked of a set of sentinels the way the
// Sentinel client guidelines say: the sentinels in turn, each with a short
// timeout, the one that answered moved to the front; asked again before
// every new connection (net/open_connection.h), whose ROLE then confirms it.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/owned_thread.h"
#include "net/connection.h"
#include "net/socket.h"
#include "net/url.h"

namespace spdlog {
class logger;
}

namespace fairlock::detail {

// The server a sentinel named is not the master (ROLE says otherwise), or
// a master answered a write with -READONLY (it was demoted): nothing ran.
class NotMaster : public NotConnected {
 public:
  using NotConnected::NotConnected;
};

struct SentinelConfig {
  std::vector<Endpoint> sentinels;  // with the sentinels' credentials and TLS
  std::string master_name;
  std::shared_ptr<const TlsContext> tls;  // for rediss-sentinel://
  std::chrono::milliseconds timeout;      // of one sentinel's connection and answer
};

class MasterLocator {
 public:
  // How often the sentinels are asked while following (follow()).
  static constexpr std::chrono::milliseconds kFollowEvery{1000};
  // After a round in which no sentinel answered, how long the master known
  // last is used without asking again (stalled sentinels would cost every
  // new connection a timeout each).
  static constexpr std::chrono::milliseconds kSilentFor{1000};

  MasterLocator(SentinelConfig config, spdlog::logger& log);
  ~MasterLocator() { stop_following(); }
  MasterLocator(const MasterLocator&) = delete;
  MasterLocator& operator=(const MasterLocator&) = delete;

  // The master's host and port in `node` (its credentials, db and TLS kept),
  // from the first sentinel that names one not in `excluded` (addresses
  // found not to be the master); when no sentinel answers, the master known
  // last, unless excluded. Each sentinel's wait is cut by the calling
  // thread's CallDeadline. Call confirmed() once ROLE said master. Throws UnknownMasterError when every sentinel
  // that answered knows no master of that name, NotConnected when none
  // answered and no master is known; when none answered because of a setup
  // that cannot work (AccessDenied, a TLS certificate that does not verify:
  // is_setup_error), that error.
  Endpoint locate(Endpoint node, const std::vector<Endpoint>& excluded);
  // Changes whenever the master may have changed (its address did, or one
  // answered -READONLY): a connection opened before is not used again.
  std::uint64_t generation() const { return generation_.load(); }
  // `master` answered ROLE master: it is the master now (on_change if it
  // was another).
  void confirmed(const Endpoint& master);
  // A connection to the master answered -READONLY: it was demoted.
  void demoted();
  // Asks the sentinels every kFollowEvery on a thread of its own, and
  // confirms a new master by ROLE over `data` (the master's settings), so
  // that a change no connection noticed is followed (after SENTINEL
  // FAILOVER the old master takes writes on the connections it has for
  // some 20 s more). Until stop_following().
  void follow(Target data);
  void stop_following() noexcept;
  // Called (once per change, on the thread that found it) when the master's
  // address changed. Set before any connection is opened.
  void on_change(std::function<void()> f) { on_change_ = std::move(f); }
  const std::string& master_name() const { return config_.master_name; }
  // A sentinel has named a master (the set exists: a master that cannot be
  // reached now is a failover under way).
  bool named() const noexcept { return named_.load(); }

 private:
  std::optional<Endpoint> ask(const Endpoint& sentinel);
  void move_to_front(std::size_t i);
  std::optional<Endpoint> last_known() const;
  bool silent() const;
  // A sentinel that failed to answer (not for a setup error) is not asked
  // again for kSilentFor: the next address asked for (a named one refused,
  // another thread's connection) does not wait on a stalled one again.
  bool resting(const Endpoint& sentinel) const;
  void rest(const Endpoint& sentinel);
  std::string sentinel_list() const;
  void check_master(Target data) noexcept;

  const SentinelConfig config_;
  spdlog::logger& log_;
  std::function<void()> on_change_;
  std::atomic<std::uint64_t> generation_{0};
  std::atomic<bool> named_{false};
  mutable std::mutex mu_;
  std::vector<Endpoint> order_;                           // the sentinels, the last to answer first
  std::optional<Endpoint> last_known_;                    // host and port of the master last confirmed
  std::chrono::steady_clock::time_point silent_until_{};  // none answered: use last_known_ until then
  std::map<std::string, std::chrono::steady_clock::time_point> resting_until_;  // by where()
  // follow()'s thread.
  std::mutex follow_mu_;
  std::condition_variable follow_cv_;
  bool stop_following_ = false;
  OwnedThread follower_;
};

// Same host and port.
bool same_address(const Endpoint& a, const Endpoint& b);

}  // namespace fairlock::detail
