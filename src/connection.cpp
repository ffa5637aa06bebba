#include "connection.h"

#include <hiredis/hiredis.h>
#include <poll.h>
#include <sys/time.h>

#include <cerrno>
#include <cstdlib>
#include <stdexcept>

#include "fairlock/errors.h"

namespace fairlock::detail {

void ReplyDeleter::operator()(redisReply* r) const noexcept {
  if (r) freeReplyObject(r);
}
void ContextDeleter::operator()(redisContext* c) const noexcept {
  if (c) redisFree(c);
}

namespace {

timeval to_timeval(std::chrono::milliseconds ms) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(ms.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms.count() % 1000) * 1000);
  return tv;
}

int parse_int(std::string_view s, int lo, int hi, const char* what) {
  if (s.empty() || s.size() > 9) throw std::invalid_argument(std::string("url: bad ") + what);
  int v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') throw std::invalid_argument(std::string("url: bad ") + what);
    v = v * 10 + (c - '0');
  }
  if (v < lo || v > hi) throw std::invalid_argument(std::string("url: ") + what + " out of range");
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

}  // namespace

Endpoint parse_url(const std::string& url) {
  Endpoint ep;
  std::string_view u(url);
  constexpr std::string_view kRedis = "redis://", kUnix = "unix://";
  if (u.substr(0, kUnix.size()) == kUnix) {
    ep.unix_socket = true;
    std::string_view rest = u.substr(kUnix.size());
    auto q = rest.find('?');
    ep.path = std::string(rest.substr(0, q));
    if (ep.path.empty() || ep.path[0] != '/') throw std::invalid_argument("url: unix socket path must be absolute");
    if (q != std::string_view::npos) {
      std::string_view query = rest.substr(q + 1);
      if (query.substr(0, 3) != "db=") throw std::invalid_argument("url: only ?db=N is understood");
      ep.db = parse_int(query.substr(3), 0, 1 << 20, "db");
    }
    return ep;
  }
  if (u.substr(0, kRedis.size()) != kRedis) {
    throw std::invalid_argument("url: must start with redis:// or unix://");
  }
  std::string_view rest = u.substr(kRedis.size());
  auto slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  if (slash != std::string_view::npos) {
    std::string_view db = rest.substr(slash + 1);
    if (!db.empty()) ep.db = parse_int(db, 0, 1 << 20, "db");
  }
  auto at = authority.rfind('@');
  if (at != std::string_view::npos) {
    std::string_view cred = authority.substr(0, at);
    authority = authority.substr(at + 1);
    auto colon = cred.find(':');
    if (colon == std::string_view::npos) {
      ep.password = percent_decode(cred);
    } else {
      ep.user = percent_decode(cred.substr(0, colon));
      ep.password = percent_decode(cred.substr(colon + 1));
    }
  }
  if (authority.empty()) throw std::invalid_argument("url: missing host");
  if (authority.front() == '[') {  // [::1]:6379
    auto close = authority.find(']');
    if (close == std::string_view::npos) throw std::invalid_argument("url: bad IPv6 host");
    ep.host = std::string(authority.substr(1, close - 1));
    authority = authority.substr(close + 1);
    if (!authority.empty()) {
      if (authority.front() != ':') throw std::invalid_argument("url: bad port");
      ep.port = parse_int(authority.substr(1), 1, 65535, "port");
    }
  } else {
    auto colon = authority.rfind(':');
    ep.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) ep.port = parse_int(authority.substr(colon + 1), 1, 65535, "port");
  }
  if (ep.host.empty()) throw std::invalid_argument("url: missing host");
  return ep;
}

Connection::Connection(const Endpoint& ep, std::chrono::milliseconds connect_timeout,
                       std::chrono::milliseconds command_timeout) {
  timeval ctv = to_timeval(connect_timeout);
  ctx_.reset(ep.unix_socket ? redisConnectUnixWithTimeout(ep.path.c_str(), ctv)
                            : redisConnectWithTimeout(ep.host.c_str(), ep.port, ctv));
  if (!ctx_) throw ConnectionError("redis: cannot allocate a connection");
  if (ctx_->err) {
    std::string where = ep.unix_socket ? ep.path : ep.host + ":" + std::to_string(ep.port);
    throw ConnectionError("redis: cannot connect to " + where + ": " + ctx_->errstr);
  }
  redisSetTimeout(ctx_.get(), to_timeval(command_timeout));
  redisEnableKeepAlive(ctx_.get());
  if (!ep.password.empty()) {
    Argv auth = ep.user.empty() ? Argv{"AUTH", ep.password} : Argv{"AUTH", ep.user, ep.password};
    ReplyPtr r = command(auth);
    if (is_error(*r)) throw_reply_error(*r, "AUTH");
  }
  if (ep.db != 0) {
    std::string db = std::to_string(ep.db);
    ReplyPtr r = command({"SELECT", db});
    if (is_error(*r)) throw_reply_error(*r, "SELECT");
  }
}

void Connection::fail(const char* what) {
  broken_ = true;
  std::string msg = std::string("redis: ") + what + ": " + (ctx_->errstr[0] ? ctx_->errstr : "connection lost");
  if (ctx_->err == REDIS_ERR_IO && (errno == EAGAIN || errno == EWOULDBLOCK || errno == ETIMEDOUT)) {
    throw TimeoutError(msg);
  }
  throw ConnectionError(msg);
}

void Connection::append(const Argv& argv) {
  if (broken_) throw ConnectionError("redis: connection is broken");
  std::vector<const char*> ptrs;
  std::vector<size_t> lens;
  ptrs.reserve(argv.size());
  lens.reserve(argv.size());
  for (auto a : argv) {
    ptrs.push_back(a.data());
    lens.push_back(a.size());
  }
  if (redisAppendCommandArgv(ctx_.get(), static_cast<int>(argv.size()), ptrs.data(), lens.data()) != REDIS_OK) {
    fail("cannot format command");
  }
}

void Connection::flush() {
  int done = 0;
  while (!done) {
    if (redisBufferWrite(ctx_.get(), &done) != REDIS_OK) fail("write failed");
  }
}

ReplyPtr Connection::command(const Argv& argv) {
  append(argv);
  void* raw = nullptr;
  if (redisGetReply(ctx_.get(), &raw) != REDIS_OK || raw == nullptr) fail("command failed");
  return ReplyPtr(static_cast<redisReply*>(raw));
}

std::vector<ReplyPtr> Connection::pipeline(const std::vector<Argv>& commands) {
  for (const auto& c : commands) append(c);
  std::vector<ReplyPtr> out;
  out.reserve(commands.size());
  for (std::size_t i = 0; i < commands.size(); ++i) {
    void* raw = nullptr;
    if (redisGetReply(ctx_.get(), &raw) != REDIS_OK || raw == nullptr) fail("pipeline failed");
    out.emplace_back(static_cast<redisReply*>(raw));
  }
  return out;
}

std::vector<ReplyPtr> Connection::read_available() {
  if (broken_) throw ConnectionError("redis: connection is broken");
  if (redisBufferRead(ctx_.get()) != REDIS_OK) fail("read failed");
  std::vector<ReplyPtr> out;
  for (;;) {
    void* raw = nullptr;
    if (redisGetReplyFromReader(ctx_.get(), &raw) != REDIS_OK) fail("protocol error");
    if (raw == nullptr) break;
    out.emplace_back(static_cast<redisReply*>(raw));
  }
  return out;
}

int Connection::fd() const { return ctx_->fd; }

bool Connection::idle_and_open() const {
  if (broken_ || ctx_->fd < 0) return false;
  // An idle connection has nothing to read: readable means the server
  // closed it (restart, CLIENT KILL, timeout) or sent something unasked.
  pollfd p{ctx_->fd, POLLIN | POLLRDHUP, 0};
  int n = ::poll(&p, 1, 0);
  return n == 0;
}

bool is_error(const redisReply& r) { return r.type == REDIS_REPLY_ERROR; }
bool is_array(const redisReply& r) { return r.type == REDIS_REPLY_ARRAY; }
std::string_view reply_error(const redisReply& r) {
  return r.type == REDIS_REPLY_ERROR && r.str ? std::string_view(r.str, r.len) : std::string_view();
}

void throw_reply_error(const redisReply& r, std::string_view context) {
  std::string msg(reply_error(r).empty() ? std::string_view("unknown error") : reply_error(r));
  std::string where(context);
  auto starts = [&](std::string_view prefix) { return msg.rfind(prefix, 0) == 0; };
  if (starts("FLPERMITS ")) {
    throw PermitsMismatch(where + ": permits mismatch: this name is in use with " + msg.substr(10) + " permit(s)");
  }
  // The server is there but cannot serve now (loading its data after a
  // restart, busy with a long script, a replica without its primary, a
  // primary demoted by a failover): the same as unreachable, so callers
  // retry it like a dropped connection.
  for (std::string_view transient : {"LOADING", "BUSY", "MASTERDOWN", "TRYAGAIN", "READONLY"}) {
    if (starts(transient) && (msg.size() == transient.size() || msg[transient.size()] == ' ')) {
      throw ConnectionError(where + ": redis cannot serve now: " + msg);
    }
  }
  if (starts("NOAUTH") || msg.find("Protocol error: unauthenticated") != std::string::npos) {
    // (Redis refuses long commands from a connection that has not
    // authenticated with that protocol error instead of NOAUTH.)
    throw ServerError(where + ": NOAUTH: the server needs a password, give it in Options::url as " +
                      "redis://[user:]password@host:port (redis said: " + msg + ")");
  }
  if (starts("WRONGPASS")) throw ServerError(where + ": " + msg + " (check the user and password in Options::url)");
  throw ServerError(where + ": " + msg);
}

namespace {
[[noreturn]] void unexpected(const redisReply& r, const char* wanted) {
  if (r.type == REDIS_REPLY_ERROR) throw_reply_error(r, "redis");
  throw ServerError(std::string("redis: unexpected reply type ") + std::to_string(r.type) + ", wanted " + wanted);
}
}  // namespace

std::string_view reply_string(const redisReply& r) {
  if (r.type != REDIS_REPLY_STRING && r.type != REDIS_REPLY_STATUS) unexpected(r, "string");
  return std::string_view(r.str, r.len);
}

long long reply_integer(const redisReply& r) {
  if (r.type == REDIS_REPLY_INTEGER) return r.integer;
  if (r.type == REDIS_REPLY_STRING) {
    char* end = nullptr;
    std::string s(r.str, r.len);
    long long v = std::strtoll(s.c_str(), &end, 10);
    if (end && *end == '\0' && !s.empty()) return v;
  }
  unexpected(r, "integer");
}

std::size_t reply_size(const redisReply& r) {
  if (r.type != REDIS_REPLY_ARRAY) unexpected(r, "array");
  return r.elements;
}

const redisReply& reply_at(const redisReply& r, std::size_t i) {
  if (r.type != REDIS_REPLY_ARRAY || i >= r.elements) unexpected(r, "longer array");
  return *r.element[i];
}

}  // namespace fairlock::detail
