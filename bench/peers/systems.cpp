#include "systems.h"

#include <map>
#include <stdexcept>
#include <vector>

#include "protocol/calls.h"    // fairlock's calls of its scripts (src/)
#include "protocol/scripts.h"  // fairlock's embedded scripts and their SHA1s (src/)

namespace fbench {

namespace {
const char* kUnlockLua =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end";
// KEYS[1] the list, ARGV[1] the channel prefix.
const char* kListReleaseLua =
    "redis.call('LPOP', KEYS[1]) local n = redis.call('LINDEX', KEYS[1], 0) "
    "if n then redis.call('PUBLISH', ARGV[1] .. n, '1') end return 1";
constexpr std::int64_t kMs = 1000000;

std::string load_script(Redis& c, const char* lua) {
  Reply r = c.cmd({"SCRIPT", "LOAD", lua});
  std::string sha = reply_str(r.get());
  if (sha.size() != 40) throw std::runtime_error("SCRIPT LOAD failed: " + reply_text(r.get()));
  return sha;
}
}  // namespace

std::string load_unlock_script(Redis& c) { return load_script(c, kUnlockLua); }

std::string load_list_release_script(Redis& c) { return load_script(c, kListReleaseLua); }

long long client_command_usec(const ServerDelta& d, const std::string& system) {
  static const std::map<std::string, std::vector<std::string>> plain = {
      {"unfair", {"set"}}, {"list", {"rpush"}}, {"zset", {"zremrangebyscore", "zadd", "zrange", "set", "zrem"}}};
  long long usec = d.top_usec;
  auto it = plain.find(system);
  if (it == plain.end()) return usec;
  for (const auto& name : it->second) {
    auto c = d.per_command_usec.find(name);
    if (c != d.per_command_usec.end()) usec += c->second;
  }
  return usec;
}

void list_subscribe(Redis& sub, const std::string& channel) {
  Reply r = sub.cmd({"SUBSCRIBE", channel});
  if (r->type != REDIS_REPLY_ARRAY) throw std::runtime_error("SUBSCRIBE: " + reply_text(r.get()));
}

bool list_lock(Redis& c, Redis& sub, const ListLock& l, const std::string& me, const StopFn& stop, RtCounter& rt) {
  Reply r = c.cmd({"RPUSH", l.key, me});
  rt.hit();
  if (r->type != REDIS_REPLY_INTEGER) throw std::runtime_error("RPUSH: " + reply_text(r.get()));
  if (r->integer == 1) return true;
  for (;;) {
    // Only the release that makes me the head publishes on my channel.
    for (const Reply& m : sub.read_available(20)) {
      if (m->type == REDIS_REPLY_ARRAY && m->elements == 3 && reply_str(m->element[0]) == "message") return true;
    }
    if (stop()) return false;
  }
}

void list_unlock(Redis& c, const std::string& sha, const ListLock& l, RtCounter& rt) {
  Reply r = c.cmd({"EVALSHA", sha, "1", l.key, l.channel_prefix});
  rt.hit();
  if (r->type == REDIS_REPLY_ERROR) throw std::runtime_error("list unlock: " + reply_text(r.get()));
}

bool unfair_lock(Redis& c, const std::string& key, const std::string& token, const StopFn& stop, RtCounter& rt) {
  for (;;) {
    Reply r = c.cmd({"SET", key, token, "NX", "PX", "10000"});
    rt.hit();
    if (reply_ok(r.get())) return true;
    if (r->type == REDIS_REPLY_ERROR) throw std::runtime_error("SET NX: " + reply_text(r.get()));
    if (stop()) return false;
    sleep_ns(1 * kMs);
  }
}

void unfair_unlock(Redis& c, const std::string& sha, const std::string& key, const std::string& token, RtCounter& rt) {
  Reply r = c.cmd({"EVALSHA", sha, "1", key, token});
  rt.hit();
  if (r->type == REDIS_REPLY_ERROR) throw std::runtime_error("unlock: " + reply_text(r.get()));
}

bool zset_lock(Redis& c, const std::string& qkey, const std::string& lkey, const std::string& token, const StopFn& stop,
               RtCounter& rt, int first_sleep_ms) {
  std::int64_t sleep_ms = first_sleep_ms;
  for (;;) {
    const std::int64_t now = wall_ms();
    auto r = c.pipeline({{"ZREMRANGEBYSCORE", qkey, "-inf", std::to_string(now)},
                         {"ZADD", qkey, "NX", std::to_string(now + 3000), token},
                         {"ZRANGE", qkey, "0", "0"}});
    rt.hit();
    const redisReply* head = r[2].get();
    if (head->type == REDIS_REPLY_ERROR) throw std::runtime_error("ZRANGE: " + reply_text(head));
    if (head->type == REDIS_REPLY_ARRAY && head->elements == 1 && reply_str(head->element[0]) == token) {
      Reply s = c.cmd({"SET", lkey, token, "NX", "PX", "10000"});
      rt.hit();
      if (reply_ok(s.get())) {
        c.cmd({"ZREM", qkey, token});
        rt.hit();
        return true;
      }
    }
    // Sleep 500 ms (in slices, so a stop request is seen).
    const std::int64_t until = now_ns() + sleep_ms * kMs;
    sleep_ms = 500;
    while (now_ns() < until) {
      if (stop()) {
        c.cmd({"ZREM", qkey, token});
        return false;
      }
      sleep_ns(10 * kMs);
    }
  }
}

void zset_unlock(Redis& c, const std::string& sha, const std::string& lkey, const std::string& token, RtCounter& rt) {
  unfair_unlock(c, sha, lkey, token, rt);
}

void load_fairlock_scripts(Redis& c) {
  using fairlock::detail::Script;
  Reply lib = c.cmd({"FUNCTION", "LOAD", "REPLACE", std::string(fairlock::detail::library_source())});
  if (lib->type == REDIS_REPLY_ERROR) throw std::runtime_error("FUNCTION LOAD failed: " + reply_text(lib.get()));
  for (Script s : fairlock::detail::kAllScripts) {
    Reply r = c.cmd({"SCRIPT", "LOAD", std::string(fairlock::detail::script_source(s))});
    if (reply_str(r.get()) != fairlock::detail::script_sha(s)) {
      throw std::runtime_error("SCRIPT LOAD of fairlock script failed: " + reply_text(r.get()));
    }
  }
}

namespace {
using std::chrono::milliseconds;
namespace fl = fairlock::detail;

// A call as the client makes it by default: FCALL of the script's function.
std::vector<std::string> fcall(const fl::ScriptCall& call) {
  const std::vector<std::string_view> command = fl::script_command(call, fl::ScriptWay::functions);
  return {command.begin(), command.end()};
}
}  // namespace

std::vector<std::string> raw_acquire_argv(const RawKeys& k, const std::string& member, int permits, long long lease_ms,
                                          long long liveness_ms, char mode) {
  if (mode != 'q' && mode != 'f' && mode != 't') throw std::invalid_argument(std::string("acquire mode ") + mode);
  fl::AcquireArgs a;
  a.member = member;
  a.permits = static_cast<std::uint32_t>(permits);
  a.lease = milliseconds(lease_ms);
  a.liveness = milliseconds(liveness_ms);
  a.queue = mode != 't';
  a.first = mode == 'f';
  return fcall(fl::acquire_call(k, a));
}

std::vector<std::string> raw_release_argv(const RawKeys& k, const std::string& member, int permits) {
  return fcall(fl::release_call(k, member, static_cast<std::uint32_t>(permits), false));
}

std::vector<std::string> raw_heartbeat_argv(const RawKeys& k, int permits, long long liveness_ms,
                                            const std::vector<std::string>& members, long long lease_ms) {
  fl::BeatName name{&k, static_cast<std::uint32_t>(permits), {}, 0};
  for (const auto& m : members) name.entries.push_back(fl::BeatEntry{m, milliseconds(lease_ms)});
  return fcall(fl::heartbeat_call(name, milliseconds(liveness_ms)));
}

std::string fake_member(char mode, std::uint64_t cid, std::uint64_t n, long long lease_ms) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%c%016llx:%08llx%016llx:%lld", mode, static_cast<unsigned long long>(cid),
                static_cast<unsigned long long>((n * 0x9e3779b97f4a7c15ULL) >> 32), static_cast<unsigned long long>(n),
                lease_ms);
  return buf;
}

}  // namespace fbench
