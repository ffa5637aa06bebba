#pragma once
// RAII over hiredis: contexts, replies, URL parsing, error mapping.
// Nothing outside src/ sees a hiredis type.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

struct redisContext;
struct redisReply;

namespace fairlock::detail {

struct ReplyDeleter {
  void operator()(redisReply* r) const noexcept;
};
struct ContextDeleter {
  void operator()(redisContext* c) const noexcept;
};
using ReplyPtr = std::unique_ptr<redisReply, ReplyDeleter>;
using ContextPtr = std::unique_ptr<redisContext, ContextDeleter>;

struct Endpoint {
  bool unix_socket = false;
  std::string host = "127.0.0.1";
  int port = 6379;
  std::string path;
  std::string user;
  std::string password;
  int db = 0;
};

// Parses "redis://[user:password@]host:port[/db]" and
// "unix:///path/redis.sock[?db=N]". Throws std::invalid_argument("url: ...").
Endpoint parse_url(const std::string& url);

using Argv = std::vector<std::string_view>;

// One blocking connection. Error replies are returned, not thrown; I/O
// failures throw ConnectionError / TimeoutError and leave the connection
// broken() (the pool then drops it).
class Connection {
 public:
  Connection(const Endpoint& ep, std::chrono::milliseconds connect_timeout, std::chrono::milliseconds command_timeout);
  ReplyPtr command(const Argv& argv);
  std::vector<ReplyPtr> pipeline(const std::vector<Argv>& commands);
  // For the subscriber: queue a command without reading its reply.
  void append(const Argv& argv);
  void flush();
  // Reads whatever the socket has and returns every complete reply.
  std::vector<ReplyPtr> read_available();
  int fd() const;
  bool broken() const { return broken_; }
  // False when an idle connection was closed by the server meanwhile
  // (checked without blocking before the pool hands it out again).
  bool idle_and_open() const;

 private:
  [[noreturn]] void fail(const char* what);
  ContextPtr ctx_;
  bool broken_ = false;
};

// Throws the typed error for an error reply (ServerError, PermitsMismatch).
[[noreturn]] void throw_reply_error(const redisReply& r, std::string_view context);
// Accessors that throw ServerError("unexpected reply ...") on a type mismatch.
bool is_error(const redisReply& r);
bool is_array(const redisReply& r);
// The text of an error reply ("" for any other reply).
std::string_view reply_error(const redisReply& r);
std::string_view reply_string(const redisReply& r);
long long reply_integer(const redisReply& r);
std::size_t reply_size(const redisReply& r);
const redisReply& reply_at(const redisReply& r, std::size_t i);

}  // namespace fairlock::detail
