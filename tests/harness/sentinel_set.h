#pragma once
// A real Sentinel set owned by a test: 1 master + 2 replicas (RedisServer,
// persisting nothing) and 3 sentinels (quorum 2), each on free loopback
// ports, each sentinel with its own config file (which it rewrites) in a
// temporary directory. Ready when every sentinel knows the master, both
// replicas and the 2 other sentinels. Drives the failovers the tests need:
// SIGKILL, SIGSTOP and SENTINEL FAILOVER, each waited for with a bound (polls
// every 50 ms, no fixed sleeps). The destructor kills every process.
//
// With tls, every process also has a TLS port (certificates of tls_pki.h),
// and replication and every sentinel link (to the data nodes and to the
// other sentinels) go over TLS: the sentinels know the data nodes and each
// other by their TLS ports, and url() names the sentinels' TLS ports. The
// plain ports stay for the harness's own checks (RedisServer::cmd).
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "redis_server.h"

namespace fairlock::test {

struct SentinelSetOptions {
  bool tls = false;
  std::string master_name = "fl";
  // Short, but a server that misses 1.5 s of pings on 2 loaded cores is rare.
  std::chrono::milliseconds down_after{1500};
  // Also (twice) the pause before a sentinel retries a failover that failed
  // (e.g. a split vote): short enough for many failovers in a row.
  std::chrono::milliseconds failover_timeout{5000};
  // The default user's password (requirepass) of the data nodes, which the
  // replicas (masterauth) and the sentinels (sentinel auth-pass) give them;
  // none if empty.
  std::string data_password;
  // The sentinels' own requirepass, which they give each other (sentinel
  // sentinel-pass); none if empty. The harness gives both where they belong.
  std::string sentinel_password;
};

class SentinelSet {
 public:
  using ms = std::chrono::milliseconds;
  static constexpr int kNodes = 3, kSentinels = 3;

  explicit SentinelSet(SentinelSetOptions o = {}, ms limit = ms(60000));
  ~SentinelSet();
  SentinelSet(const SentinelSet&) = delete;
  SentinelSet& operator=(const SentinelSet&) = delete;

  // "redis-sentinel://127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3#fl" (rediss-sentinel:// and TLS ports with tls).
  std::string url() const;
  const std::string& master_name() const { return o_.master_name; }
  bool tls() const { return o_.tls; }
  // Data node i (0 is the first master), sentinel i: pause/resume/kill/restart
  // them directly (a sentinel restarts on its port and config file, which it
  // rewrote: it knows the master of now). A sentinel SIGSTOPped for 2 s or
  // more enters TILT mode when resumed: for 30 s it acts on nothing.
  RedisServer& node(int i) { return *nodes_.at(i); }
  RedisServer& sentinel(int i) { return *sentinels_.at(i); }
  // The port the sentinels and replicas use: the TLS port with tls.
  int data_port(int node) const;
  int sentinel_port(int sentinel) const;

  // The master's port as the first sentinel that answers says
  // (SENTINEL get-master-addr-by-name; a data_port), and its node's index.
  int master_port() const;
  int master_index() const;

  // SIGKILLs the master, waits until the sentinels that answer (at least 2)
  // agree on a new master that answers ROLE master, restarts the killed node
  // as a replica of it and waits until the set is settled again
  // (wait_settled): the next failover has 2 replicas. Returns the time from
  // the kill to the first poll at which a sentinel named the new master and
  // it answered ROLE master. `limit` bounds the whole call.
  // With replicas_behind: replication is cut (cut_replication()) that long
  // before the kill, and the replicas resumed after it, so that the
  // master's writes of that time (grants, renewals, releases) are lost with
  // it, as when replication lags.
  ms kill_master_and_wait_failover(ms limit = ms(60000), ms replicas_behind = ms(0));
  // SIGSTOPs both replicas and has the master drop its links to them: what
  // the master writes from now on reaches no replica (a stopped replica
  // would still read what was sent into its socket before the kill).
  // kill_master_and_wait_failover(limit, replicas_behind) resumes them.
  void cut_replication();
  // SENTINEL FAILOVER, then waits as above. The old master keeps answering
  // ROLE master (and taking writes from the clients it has) until the
  // sentinels demote it: 10 to 20 s later (Sentinel waits 8 s after it
  // reports its role, which it asks every 10 s). Returns the time to the new
  // master; the call returns once the old one is a replica again.
  ms failover_coordinated(ms limit = ms(60000));
  // Split brain: SIGSTOPs the master and waits for the new one (as above);
  // returns the time from the stop to the new master. The old master stays
  // stopped, believing it is master, until resume_old_master().
  ms pause_master(ms limit = ms(60000));
  // SIGCONTs the node pause_master() stopped, waits until the sentinels have
  // demoted it (ROLE slave) and the set is settled; returns the time from the
  // resume to its ROLE slave.
  ms resume_old_master(ms limit = ms(60000));
  // A 4th sentinel, alone: quorum 1, monitoring the master name at
  // 127.0.0.1:`port` (a replica's data port, or one where nothing listens),
  // which it keeps naming: a stale sentinel. It fails nothing over for a
  // minute (down-after 60 s). Same TLS and passwords as the set's sentinels.
  // When `port` is a node's, it and the set's sentinels meet through that
  // node's hello channel; it keeps its address while no failover has raised
  // the set's config epoch; the set's sentinels then count it as a 4th
  // voter (a failover needs 3 votes of 4 while it runs: a test that fails
  // the set over with one should not count on that). The caller destroys it
  // before the set.
  std::unique_ptr<RedisServer> stale_sentinel(int port) const;
  // Waits until the sentinels that run (at least 2: a test may have killed
  // one) agree on a master that answers ROLE master, both other nodes are its
  // online replicas, and each of those sentinels sees it all (master, healthy
  // replicas, the other running sentinels). Throws at once if a node is down.
  void wait_settled(ms limit = ms(60000)) const;

 private:
  struct TempDir {
    TempDir();
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    std::string path;
  };
  using Clock = std::chrono::steady_clock;

  std::vector<std::string> data_args(int replica_of) const;
  TlsPort tls_port() const;
  void start_nodes(Clock::time_point end);
  void start_sentinels();
  std::string sentinel_config(int master_port, int quorum, ms down_after) const;
  std::unique_ptr<RedisServer> start_sentinel(const std::string& config_file, const std::string& config) const;
  int index_of(int port) const;
  int named_master_port(int s) const;
  std::vector<int> named_master_ports() const;
  std::string replicas_not_online(int m) const;
  // Polls `state` ("" when done, else what is missing) until done; throws if not done by `end`.
  void poll_until(const std::string& what, const std::function<std::string()>& state, Clock::time_point end) const;
  struct NewMaster {
    int index;  // of the node
    ms took;    // from t0 to the first poll at which a sentinel named it and it answered ROLE master
  };
  NewMaster wait_new_master(int old, Clock::time_point t0, Clock::time_point end) const;
  std::string unsettled() const;
  std::string unsettled_sentinel(int s, int m) const;
  [[noreturn]] void time_out(const std::string& what, const std::string& state) const;

  SentinelSetOptions o_;
  TempDir dir_;  // first: removed after every process is gone
  std::vector<std::unique_ptr<RedisServer>> nodes_;
  std::vector<std::unique_ptr<RedisServer>> sentinels_;  // last: killed first
  int paused_ = -1;                                      // the node pause_master() stopped
};

}  // namespace fairlock::test
