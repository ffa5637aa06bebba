#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace spdlog {
class logger;
}

namespace fairlock {

// The bounds every argument is checked against (the Lua scripts check the same).
namespace limits {
inline constexpr std::uint32_t kMaxPermits = 1000000;
// Leases, liveness and timeouts: at most 2^31-1 ms (about 24.8 days).
inline constexpr std::chrono::milliseconds kMaxDuration{2147483647};
// The shortest lease: the heartbeat renews a grant every third of its lease
// (never more often than every 10 ms), so a shorter one is lost before a
// renewal can reach the server.
inline constexpr std::chrono::milliseconds kMinLease{100};
// With Options::sync_replicas: how much longer than its timeout a WAIT may
// take (the server honours the timeout at its next cron tick, hz 10: up to
// 100 ms late), so a call that carries one for no caller's deadline (a try,
// a heartbeat round) may take Options::sync_timeout plus this; sync_timeout
// must be shorter than command_timeout by this much. A timed wait's WAIT is
// sent shorter instead, so that the wait still ends by its deadline plus
// 100 ms (README, Deadlines).
inline constexpr std::chrono::milliseconds kSyncSlack{250};
}  // namespace limits

// How a waiting process learns that a grant was handed to it.
enum class Notify {
  publish,   // default: scripts PUBLISH to the process's own channel
  keyspace,  // scripts write a per-(name, process) key; the process watches
             // its keyspace channel (needs notify-keyspace-events K and $ or A)
  poll,      // no signal: position-aware polling and the heartbeat only
};

enum class TlsVersion { v1_2, v1_3 };

// TLS settings, used when Options::url starts with rediss://. The server's
// certificate and name are always verified unless the opt-out below is set.
struct TlsOptions {
  // CAs to trust: a PEM file and/or a directory of hashed certificates
  // (c_rehash); both empty means the system's default store.
  std::string ca_file;
  std::string ca_dir;
  // Client certificate (PEM, may hold its chain) and its private key, for
  // servers that require them (tls-auth-clients yes): both or neither.
  std::string cert_file;
  std::string key_file;
  // The name sent as SNI and checked against the certificate; empty means
  // the URL's host (an IP address is checked against the certificate's IPs).
  std::string server_name;
  TlsVersion min_version = TlsVersion::v1_2;
  // For test setups only: accept any certificate for any name. Anyone on
  // the path can then read and change every command. Logged as a warning.
  bool insecure_skip_verify_testing_only = false;
};

// How to reach the sentinels of a Sentinel URL (Options::url
// "redis-sentinel://..."), when it differs from the data nodes.
struct SentinelOptions {
  // Credentials for the sentinels (requirepass / ACL of sentinel.conf);
  // empty means none. The URL's user:password are the data nodes'.
  std::string user;
  std::string password;
  // TLS to the sentinels (rediss-sentinel:// only): unset means Options::tls.
  std::optional<TlsOptions> tls;
};

// Connection and process-wide settings of a Client.
struct Options {
  // "redis://[user:password@]host:port[/db]", the same with "rediss://" for
  // TLS (see tls), or "unix:///path/redis.sock[?db=N]"; through Sentinel:
  // "redis-sentinel://[user:password@]host1:26379[,host2:26379...][/db]#mastername"
  // ("rediss-sentinel://" for TLS to the sentinels and the data nodes): the
  // sentinels are asked which server is the master, before every new
  // connection (docs/TOPOLOGIES.md); a Redis Cluster:
  // "redis-cluster://[user:password@]host1:6379[,host2:6379...][/0]"
  // ("rediss-cluster://" for TLS to every node; database 0 only), the nodes
  // named a way in to the cluster, not a list of its nodes.
  std::string url = "redis://127.0.0.1:6379";
  TlsOptions tls;
  SentinelOptions sentinel;
  // Replica-acknowledged grants: lock() returns (and a callback is told of a
  // grant) only once WAIT confirmed that this many replicas have it, and a
  // renewal extends what the holder believes only once acknowledged. 0: off.
  // A grant not acknowledged before the call's deadline is released and the
  // call fails with NotReplicatedError (docs/TOPOLOGIES.md).
  int sync_replicas = 0;
  // How long one WAIT may take; waiting for acknowledgement goes on, WAIT
  // after WAIT, until the call's deadline (a WAIT is sent 100 ms shorter
  // than what is left to it, for the server's tick: README "Deadlines").
  std::chrono::milliseconds sync_timeout{1000};
  // Prefix of every key and channel; no '{' or '}'.
  std::string key_prefix = "fairlock";
  std::chrono::milliseconds connect_timeout{2000};
  std::chrono::milliseconds command_timeout{2000};
  // How long a waiter's queue entry outlives its process's last heartbeat.
  // The heartbeat runs at least three times per liveness_ttl.
  std::chrono::milliseconds liveness_ttl{5000};
  // Connections for commands (the subscriber has its own).
  std::size_t pool_size = 4;
  Notify notify = Notify::publish;
  // In keyspace mode, add the flags it needs with CONFIG SET (never removes).
  bool configure_keyspace_events = false;
  // Run the scripts as functions of one library (FUNCTION LOAD once, then
  // FCALL; Redis 7 or later): Redis spends about a third less time per call
  // than with EVALSHA. The library is stored, persisted and replicated like
  // data (docs/PROTOCOL.md §4). false: EVALSHA only. Either way, a server
  // without functions, or a user not allowed FCALL or FUNCTION LOAD, gets
  // EVALSHA (with one warning in the log).
  bool use_functions = true;
  // Redis must not evict the lock's keys (maxmemory-policy noeviction): an
  // evicted grant is granted again, to a second holder. Each command
  // connection the client opens (at start-up, on every reconnect) reads the
  // policy (INFO memory, else CONFIG GET); one that can evict with maxmemory
  // set is refused with EvictionPolicyError (with maxmemory 0, or if neither
  // command is allowed: a warning in the log). true: go on, with an error in
  // the log instead.
  bool allow_evicting_server = false;
  // Log sink; null means silent. The library never uses spdlog's registry.
  std::shared_ptr<spdlog::logger> logger;
  // Where the callbacks of asynchronous calls (lock_async, release_async)
  // run: empty means on the client's async thread (which then drives no
  // other wait until the callback returns: keep callbacks short, hand long
  // work elsewhere). Set it to run them on your own event loop, e.g. a
  // fairlock::ReadyQueue's executor(). It must accept callbacks until the
  // Client is shut down. Callbacks may call back into the library.
  std::function<void(std::function<void()>)> executor;
  // What this client says it is, shown by Client::inspect (and `fairlock
  // status`) beside its host and pid for each of its holders and waiters:
  // e.g. a job's or command's name. Empty means the program's name
  // (/proc/self/comm). At most 200 bytes are kept (cut at a UTF-8 character's
  // start); control bytes become spaces. Registered once per server and
  // kept alive by the heartbeat, never sent per call (docs/PROTOCOL.md, "Who").
  std::string description;
};

// Per-lock settings.
struct LockOptions {
  // How long a grant lasts without renewal; renewed by the heartbeat while
  // held (unless auto_renew is false).
  std::chrono::milliseconds lease{10000};
  bool auto_renew = true;
  // Called (from the heartbeat thread) when a held grant is found lost.
  std::function<void()> on_lost;
  // Called while waiting, whenever this waiter's place in the queue changes
  // (0 = next in line); learned from replies the wait makes anyway, so it
  // costs no extra round trip. Called from the waiting or heartbeat thread.
  std::function<void(std::size_t position)> on_position;
};

}  // namespace fairlock
