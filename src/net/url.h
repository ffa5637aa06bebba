#pragma once
// Where a server is: the parsed form of Options::url.
#include <string>

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

// Parses "redis://[user:password@]host:port[/db]", the same with
// "rediss://" (TLS), and "unix:///path/redis.sock[?db=N]".
// Throws BadOption("Options::url", ...).
Endpoint parse_url(const std::string& url);

}  // namespace fairlock::detail
