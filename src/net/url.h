#pragma once
// Where a server is: the parsed form of Options::url.
#include <string>
#include <vector>

namespace fairlock::detail {

struct Endpoint {
  bool unix_socket = false;
  bool tls = false;  // rediss://
  std::string host = "127.0.0.1";
  int port = 6379;
  std::string path;
  std::string user;
  std::string password;
  int db = 0;
  // "host:port" or the socket's path, for messages.
  std::string where() const;
};

// Where the data lives: one server, the master a set of sentinels names, or
// a Redis Cluster.
struct Address {
  // The server. Through Sentinel: the master's credentials, db and TLS
  // (its host and port are asked of the sentinels). In a cluster: every
  // node's credentials and TLS (host and port unused, db 0).
  Endpoint node;
  std::vector<Endpoint> sentinels;  // empty unless through Sentinel
  std::string master_name;
  // The nodes the URL names, with node's credentials and TLS: a way in to
  // the cluster only, not a list of its nodes.
  std::vector<Endpoint> cluster_seeds;  // empty unless Redis Cluster
  bool via_sentinel() const { return !sentinels.empty(); }
  bool in_cluster() const { return !cluster_seeds.empty(); }
};

// Parses "redis://[user:password@]host:port[/db]", the same with
// "rediss://" (TLS), "unix:///path/redis.sock[?db=N]",
// "redis-sentinel://[user:password@]host1:port1[,host2:port2...][/db]#master"
// (or "rediss-sentinel://", TLS to the sentinels and the master; a
// sentinel's port defaults to 26379), and
// "redis-cluster://[user:password@]host1:port1[,host2:port2...][/0]" (or
// "rediss-cluster://", TLS to every node; a seed's port defaults to 6379).
// Throws BadOption("Options::url", ...).
Address parse_address(const std::string& url);
// The server of a URL (through Sentinel: the master's settings, no host).
Endpoint parse_url(const std::string& url);

}  // namespace fairlock::detail
