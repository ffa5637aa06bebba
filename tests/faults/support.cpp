#include "support.h"

#include <hiredis/hiredis.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <stdexcept>

#include "redis_server.h"

namespace fairlock::faults {

// ---------------------------------------------------------------- Rec

Rec::Rec(int port, const std::string& host) {
  timeval tv{5, 0};
  c_ = redisConnectWithTimeout(host.c_str(), port, tv);
  if (!c_ || c_->err) {
    std::string why = c_ ? c_->errstr : "alloc";
    if (c_) redisFree(c_);
    c_ = nullptr;
    throw std::runtime_error("recorder: cannot connect to port " + std::to_string(port) + ": " + why);
  }
  timeval cmd{30, 0};
  redisSetTimeout(c_, cmd);
}

Rec::~Rec() {
  if (c_) redisFree(c_);
}

redisReply* Rec::raw(const std::vector<std::string>& argv) {
  std::vector<const char*> ptrs;
  std::vector<size_t> lens;
  for (const auto& a : argv) {
    ptrs.push_back(a.data());
    lens.push_back(a.size());
  }
  auto* r = static_cast<redisReply*>(redisCommandArgv(c_, static_cast<int>(argv.size()), ptrs.data(), lens.data()));
  if (!r) throw std::runtime_error(std::string("recorder: command failed: ") + c_->errstr);
  return r;
}

Micros Rec::time_us() {
  redisReply* r = raw({"TIME"});
  if (r->type != REDIS_REPLY_ARRAY || r->elements != 2) {
    freeReplyObject(r);
    throw std::runtime_error("recorder: bad TIME reply");
  }
  Micros t = std::atoll(r->element[0]->str) * 1000000LL + std::atoll(r->element[1]->str);
  freeReplyObject(r);
  return t;
}

void Rec::rpush(const std::string& key, const std::string& value) { freeReplyObject(raw({"RPUSH", key, value})); }

void Rec::hset(const std::string& key, const std::string& field, const std::string& value) {
  freeReplyObject(raw({"HSET", key, field, value}));
}

std::vector<std::string> Rec::lrange(const std::string& key) {
  redisReply* r = raw({"LRANGE", key, "0", "-1"});
  std::vector<std::string> out;
  for (size_t i = 0; i < r->elements; ++i) out.emplace_back(r->element[i]->str, r->element[i]->len);
  freeReplyObject(r);
  return out;
}

std::map<std::string, std::string> Rec::hgetall(const std::string& key) {
  redisReply* r = raw({"HGETALL", key});
  std::map<std::string, std::string> out;
  for (size_t i = 0; i + 1 < r->elements; i += 2) {
    out[std::string(r->element[i]->str, r->element[i]->len)] =
        std::string(r->element[i + 1]->str, r->element[i + 1]->len);
  }
  freeReplyObject(r);
  return out;
}

std::string Rec::cmd(const std::vector<std::string>& argv) {
  redisReply* r = raw(argv);
  std::string out = test::reply_text(r);
  freeReplyObject(r);
  return out;
}

// ---------------------------------------------------------------- misc

Micros mono_us() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<Micros>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}

Micros realtime_us() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<Micros>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t pos = 0;
  for (;;) {
    size_t next = s.find(sep, pos);
    out.push_back(s.substr(pos, next - pos));
    if (next == std::string::npos) break;
    pos = next + 1;
  }
  return out;
}

long long env_int(const char* name, long long fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  long long n = std::strtoll(v, &end, 10);
  return (end && *end == '\0') ? n : fallback;
}

std::string ev_key(const std::string& base) {
  static std::atomic<int> n{0};
  return "ev:" + base + ":" + std::to_string(::getpid()) + ":" + std::to_string(n.fetch_add(1));
}

}  // namespace fairlock::faults
