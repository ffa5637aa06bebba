#include "net/reply.h"

#include <hiredis/hiredis.h>

#include <cstdlib>
#include <string>

#include "fairlock/errors.h"

namespace fairlock::detail {

void ReplyDeleter::operator()(redisReply* r) const noexcept {
  if (r) freeReplyObject(r);
}

bool is_error(const redisReply& r) { return r.type == REDIS_REPLY_ERROR; }
bool is_array(const redisReply& r) { return r.type == REDIS_REPLY_ARRAY; }
bool is_nil(const redisReply& r) { return r.type == REDIS_REPLY_NIL; }
std::string_view reply_error(const redisReply& r) {
  return r.type == REDIS_REPLY_ERROR && r.str ? std::string_view(r.str, r.len) : std::string_view();
}

std::string_view error_code(std::string_view error) { return error.substr(0, error.find(' ')); }

ServerRefusal server_refusal(std::string_view error) {
  const std::string_view code = error_code(error);
  if (code == "READONLY") return ServerRefusal::readonly;
  if (code == "MOVED") return ServerRefusal::moved;
  if (code == "ASK") return ServerRefusal::ask;
  for (std::string_view busy : {"LOADING", "BUSY", "MASTERDOWN", "TRYAGAIN", "NOREPLICAS", "CLUSTERDOWN"}) {
    if (code == busy) return ServerRefusal::busy;
  }
  return ServerRefusal::none;
}

void throw_reply_error(const redisReply& r, std::string_view context) {
  std::string msg(reply_error(r).empty() ? std::string_view("unknown error") : reply_error(r));
  std::string where(context);
  auto starts = [&](std::string_view prefix) { return msg.rfind(prefix, 0) == 0; };
  // The server is there but cannot serve now (loading its data after a
  // restart, busy with a long script, a replica without its primary, a
  // primary demoted by a failover, a primary with min-replicas-to-write
  // whose replicas are not back yet; in a cluster, a slot moving or not
  // served: redirected where the router could not follow, split between
  // two nodes while it migrates, or without a master): the same as
  // unreachable, so callers retry it like a dropped connection.
  if (server_refusal(msg) != ServerRefusal::none) throw ConnectionError(where + ": redis cannot serve now: " + msg);
  if (starts("NOAUTH") || msg.find("Protocol error: unauthenticated") != std::string::npos) {
    // (Redis refuses long commands from a connection that has not
    // authenticated with that protocol error instead of NOAUTH.)
    throw AccessDenied(where + ": the server needs a password: give it in Options::url as " +
                       "redis://[user:]password@host:port (redis said: " + msg + ")");
  }
  if (starts("WRONGPASS")) throw AccessDenied(where + ": " + msg + " (check the user and password in Options::url)");
  if (starts("NOPERM")) throw AccessDenied(where + ": " + msg + " (the ACL user of Options::url lacks this right)");
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

std::optional<long long> reply_integer_if(const redisReply& r) {
  if (r.type == REDIS_REPLY_INTEGER) return r.integer;
  if (r.type == REDIS_REPLY_STRING) {
    char* end = nullptr;
    std::string s(r.str, r.len);
    long long v = std::strtoll(s.c_str(), &end, 10);
    if (end && *end == '\0' && !s.empty()) return v;
  }
  return std::nullopt;
}

long long reply_integer(const redisReply& r) {
  if (auto v = reply_integer_if(r)) return *v;
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
