#include "net/url.h"

#include <stdexcept>
#include <string>
#include <string_view>

#include "fairlock/errors.h"

namespace fairlock::detail {

namespace {

[[noreturn]] void bad_url(const std::string& problem) { throw BadOption("Options::url", problem); }

int parse_int(std::string_view s, int lo, int hi, const char* what) {
  if (s.empty() || s.size() > 9) bad_url(std::string("bad ") + what);
  int v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') bad_url(std::string("bad ") + what);
    v = v * 10 + (c - '0');
  }
  if (v < lo || v > hi) bad_url(std::string(what) + " out of range");
  return v;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string percent_decode(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex_digit(s[i + 1]) >= 0 && hex_digit(s[i + 2]) >= 0) {
      out.push_back(static_cast<char>(hex_digit(s[i + 1]) * 16 + hex_digit(s[i + 2])));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

Endpoint parse_unix_url(std::string_view rest) {
  Endpoint ep;
  ep.unix_socket = true;
  auto q = rest.find('?');
  ep.path = std::string(rest.substr(0, q));
  if (ep.path.empty() || ep.path[0] != '/') bad_url("unix socket path must be absolute");
  if (q != std::string_view::npos) {
    std::string_view query = rest.substr(q + 1);
    if (query.substr(0, 3) != "db=") bad_url("only ?db=N is understood");
    ep.db = parse_int(query.substr(3), 0, 1 << 20, "db");
  }
  return ep;
}

// "[user:]password@" in front of the host, if any; returns what follows it.
// The credentials end at the last '@' (a host, port or db holds none), so
// a password may hold '@', '/', ':' or '#' as it is, or percent-encoded.
std::string_view take_credentials(std::string_view rest, Endpoint& ep) {
  auto at = rest.rfind('@');
  if (at == std::string_view::npos) return rest;
  std::string_view cred = rest.substr(0, at);
  auto colon = cred.find(':');
  if (colon == std::string_view::npos) {
    ep.password = percent_decode(cred);
  } else {
    ep.user = percent_decode(cred.substr(0, colon));
    ep.password = percent_decode(cred.substr(colon + 1));
  }
  return rest.substr(at + 1);
}

void take_host_port(std::string_view hostport, Endpoint& ep) {
  if (hostport.empty()) bad_url("missing host");
  if (hostport.front() == '[') {  // [::1]:6379
    auto close = hostport.find(']');
    if (close == std::string_view::npos) bad_url("bad IPv6 host");
    ep.host = std::string(hostport.substr(1, close - 1));
    hostport = hostport.substr(close + 1);
    if (!hostport.empty()) {
      if (hostport.front() != ':') bad_url("bad port");
      ep.port = parse_int(hostport.substr(1), 1, 65535, "port");
    }
  } else {
    auto colon = hostport.rfind(':');
    ep.host = std::string(hostport.substr(0, colon));
    if (colon != std::string_view::npos) ep.port = parse_int(hostport.substr(colon + 1), 1, 65535, "port");
  }
  if (ep.host.empty()) bad_url("missing host");
}

// "hosts[/db]": sets ep.db from "/db", if any; returns the hosts.
std::string_view take_db(std::string_view where, Endpoint& ep) {
  const auto slash = where.find('/');
  if (slash != std::string_view::npos) {
    std::string_view db = where.substr(slash + 1);
    if (!db.empty()) ep.db = parse_int(db, 0, 1 << 20, "db");
  }
  return where.substr(0, slash);
}

Endpoint parse_tcp_url(std::string_view rest, bool tls) {
  Endpoint ep;
  ep.tls = tls;
  take_host_port(take_db(take_credentials(rest, ep), ep), ep);
  return ep;
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

// "host1:port1,host2:port2,...": the sentinels or the cluster's seeds, each
// a copy of `like` (its port the default) with its host and port.
std::vector<Endpoint> host_list(std::string_view hosts, const Endpoint& like) {
  std::vector<Endpoint> out;
  for (;;) {
    const auto comma = hosts.find(',');
    const std::string_view one = hosts.substr(0, comma);
    if (one.empty() && (comma != std::string_view::npos || !out.empty())) {
      bad_url("an empty host in the list of hosts (\",,\" or a ',' at an end)");
    }
    Endpoint ep = like;
    take_host_port(one, ep);
    out.push_back(std::move(ep));
    if (comma == std::string_view::npos) return out;
    hosts = hosts.substr(comma + 1);
  }
}

// After "redis-sentinel://": "[user:password@]hosts[/db]#master".
Address parse_sentinel_url(std::string_view rest, bool tls) {
  const auto hash = rest.rfind('#');
  if (hash == std::string_view::npos || hash + 1 == rest.size()) {
    bad_url("a Sentinel URL ends with #<master name> (e.g. redis-sentinel://host:26379#mymaster)");
  }
  Address a;
  a.master_name = percent_decode(rest.substr(hash + 1));
  a.node.tls = tls;
  a.node.host.clear();
  a.node.port = 0;
  const std::string_view hosts = take_db(take_credentials(rest.substr(0, hash), a.node), a.node);
  Endpoint sentinel;
  sentinel.tls = tls;
  sentinel.port = 26379;
  a.sentinels = host_list(hosts, sentinel);
  return a;
}

// After "redis-cluster://": "[user:password@]host1:port1[,host2:port2...][/0]".
// Every seed has the URL's credentials and TLS; `node` carries them too.
Address parse_cluster_url(std::string_view rest, bool tls) {
  Address a;
  a.node.tls = tls;
  const std::string_view where = take_credentials(rest, a.node);
  if (where.empty()) bad_url("a Redis Cluster URL names at least one node (e.g. redis-cluster://host:6379)");
  if (where.front() == '/' || starts_with(where, "unix:/")) {
    bad_url("Redis Cluster nodes are reached over TCP (host:port), not a unix socket");
  }
  if (where.find('#') != std::string_view::npos) bad_url("a Redis Cluster URL has no #master (Sentinel URLs do)");
  if (where.find('?') != std::string_view::npos) bad_url("a Redis Cluster URL has no query string (?...)");
  const std::string_view hosts = take_db(where, a.node);
  if (a.node.db != 0)
    bad_url("Redis Cluster has only database 0 (the URL asks for /" + std::to_string(a.node.db) + ")");
  Endpoint seed = a.node;
  a.node.host.clear();
  a.node.port = 0;
  a.cluster_seeds = host_list(hosts, seed);
  return a;
}

}  // namespace

std::string Endpoint::where() const { return unix_socket ? path : host + ":" + std::to_string(port); }

Address parse_address(const std::string& url) {
  constexpr std::string_view kRedis = "redis://", kRediss = "rediss://", kUnix = "unix://";
  constexpr std::string_view kSentinel = "redis-sentinel://", kSentinelTls = "rediss-sentinel://";
  constexpr std::string_view kCluster = "redis-cluster://", kClusterTls = "rediss-cluster://";
  std::string_view u(url);
  if (starts_with(u, kUnix)) return Address{parse_unix_url(u.substr(kUnix.size())), {}, {}, {}};
  if (starts_with(u, kRedis)) return Address{parse_tcp_url(u.substr(kRedis.size()), false), {}, {}, {}};
  if (starts_with(u, kRediss)) return Address{parse_tcp_url(u.substr(kRediss.size()), true), {}, {}, {}};
  if (starts_with(u, kSentinel)) return parse_sentinel_url(u.substr(kSentinel.size()), false);
  if (starts_with(u, kSentinelTls)) return parse_sentinel_url(u.substr(kSentinelTls.size()), true);
  if (starts_with(u, kCluster)) return parse_cluster_url(u.substr(kCluster.size()), false);
  if (starts_with(u, kClusterTls)) return parse_cluster_url(u.substr(kClusterTls.size()), true);
  bad_url(
      "must start with redis://, rediss://, unix://, redis-sentinel://, rediss-sentinel://, redis-cluster:// or "
      "rediss-cluster://");
}

Endpoint parse_url(const std::string& url) { return parse_address(url).node; }

}  // namespace fairlock::detail
