#pragma once
// The roulette's protected store (Redis itself, over plain hiredis): one
// spin is a read-decide-write whose write is fenced, i.e. refused if a newer
// grant has written since. Shared by roulette.cpp and roulette_async.cpp.
#include <hiredis/hiredis.h>

#include <cstdarg>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace roulette {

// The fenced write: applies a spin's outcome only if its fence is newer than
// every fence already seen. Returns 1 applied, -1 refused (stale grant).
inline const char* kFencedWrite = R"(
local last = tonumber(redis.call('GET', KEYS[3]) or '0')
if tonumber(ARGV[1]) <= last then return -1 end
redis.call('SET', KEYS[3], ARGV[1])
redis.call('SET', KEYS[1], ARGV[2])
if ARGV[3] ~= '' then redis.call('SADD', KEYS[2], ARGV[3]) end
return 1)";

struct Redis {  // a plain connection to the protected store
  redisContext* c;
  explicit Redis(const std::string& url) {
    auto colon = url.rfind(':');
    c = redisConnect(url.substr(8, colon - 8).c_str(), std::atoi(url.c_str() + colon + 1));
    if (!c || c->err) {
      if (c) redisFree(c);
      throw std::runtime_error("cannot connect to " + url);
    }
  }
  Redis(const Redis&) = delete;
  Redis& operator=(const Redis&) = delete;
  ~Redis() { redisFree(c); }
  long long integer(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    auto* r = static_cast<redisReply*>(redisvCommand(c, fmt, ap));
    va_end(ap);
    if (!r) throw std::runtime_error("redis command failed");
    long long v = r->type == REDIS_REPLY_INTEGER ? r->integer : r->type == REDIS_REPLY_STRING ? std::atoll(r->str) : 0;
    freeReplyObject(r);
    return v;
  }
};

// One spin: read, decide, fenced write. Returns +1 won, 0 lost, -1 refused.
inline int spin(Redis& store, const std::string& game, const std::string& player, std::uint64_t fence) {
  long long left = store.integer("GET %s:prizes", game.c_str());
  bool already = store.integer("SISMEMBER %s:winners %s", game.c_str(), player.c_str()) == 1;
  bool wins = left > 0 && !already;  // the wheel always pays while stock lasts
  std::string fence_s = std::to_string(fence), left_s = std::to_string(wins ? left - 1 : left);
  std::string prizes = game + ":prizes", winners = game + ":winners", fences = game + ":fence";
  long long applied = store.integer("EVAL %s 3 %s %s %s %s %s %s", kFencedWrite, prizes.c_str(), winners.c_str(),
                                    fences.c_str(), fence_s.c_str(), left_s.c_str(), wins ? player.c_str() : "");
  if (applied != 1) return -1;
  return wins ? 1 : 0;
}

// FAIRLOCK_URL or the default; empty if it is not redis://host:port (all
// the store's plain hiredis connection understands).
inline std::string store_url() {
  const char* env = std::getenv("FAIRLOCK_URL");
  std::string url = env ? env : "redis://127.0.0.1:6379";
  if (url.rfind("redis://", 0) != 0 || url.find('@') != std::string::npos) return "";
  return url;
}

}  // namespace roulette
