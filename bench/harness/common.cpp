#include "common.h"

#include <poll.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <sstream>

namespace fbench {

std::int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

std::int64_t wall_ms() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000LL + ts.tv_nsec / 1000000;
}

std::int64_t wall_us() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000LL + ts.tv_nsec / 1000;
}

void sleep_until_ns(std::int64_t t) {
  timespec ts;
  ts.tv_sec = static_cast<time_t>(t / 1000000000LL);
  ts.tv_nsec = static_cast<long>(t % 1000000000LL);
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

void sleep_ns(std::int64_t d) {
  if (d > 0) sleep_until_ns(now_ns() + d);
}

std::string fmt(const char* f, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, f);
  int n = std::vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  if (n < 0) return "";
  if (static_cast<std::size_t>(n) < sizeof buf) return std::string(buf, static_cast<std::size_t>(n));
  std::string big(static_cast<std::size_t>(n) + 1, '\0');
  va_start(ap, f);
  std::vsnprintf(big.data(), big.size(), f, ap);
  va_end(ap);
  big.resize(static_cast<std::size_t>(n));
  return big;
}

// ---------------------------------------------------------------- Redis

Redis::Redis(const std::string& host, int port, int timeout_ms) {
  timeval tv{timeout_ms / 1000, static_cast<suseconds_t>(timeout_ms % 1000) * 1000};
  c_ = redisConnectWithTimeout(host.c_str(), port, tv);
  if (!c_ || c_->err) {
    std::string why = c_ ? c_->errstr : "out of memory";
    if (c_) redisFree(c_);
    c_ = nullptr;
    throw std::runtime_error("redis connect " + host + ":" + std::to_string(port) + ": " + why);
  }
  redisSetTimeout(c_, tv);
}

Redis::~Redis() {
  if (c_) redisFree(c_);
}

void Redis::append(const std::vector<std::string>& argv) {
  std::vector<const char*> p;
  std::vector<size_t> l;
  p.reserve(argv.size());
  l.reserve(argv.size());
  for (const auto& a : argv) {
    p.push_back(a.data());
    l.push_back(a.size());
  }
  if (redisAppendCommandArgv(c_, static_cast<int>(argv.size()), p.data(), l.data()) != REDIS_OK) {
    throw std::runtime_error(std::string("redis append: ") + c_->errstr);
  }
}

Reply Redis::read() {
  void* raw = nullptr;
  if (redisGetReply(c_, &raw) != REDIS_OK || !raw) {
    throw std::runtime_error(std::string("redis read: ") + (c_->errstr[0] ? c_->errstr : "connection lost"));
  }
  return Reply(static_cast<redisReply*>(raw));
}

Reply Redis::cmd(const std::vector<std::string>& argv) {
  append(argv);
  return read();
}

std::vector<Reply> Redis::pipeline(const std::vector<std::vector<std::string>>& cmds) {
  for (const auto& c : cmds) append(c);
  std::vector<Reply> out;
  out.reserve(cmds.size());
  for (std::size_t i = 0; i < cmds.size(); ++i) out.push_back(read());
  return out;
}

void Redis::flush() {
  int done = 0;
  while (!done) {
    if (redisBufferWrite(c_, &done) != REDIS_OK) throw std::runtime_error(std::string("redis write: ") + c_->errstr);
  }
}

std::vector<Reply> Redis::read_available(int timeout_ms) {
  std::vector<Reply> out;
  pollfd p{c_->fd, POLLIN, 0};
  if (::poll(&p, 1, timeout_ms) <= 0) return out;
  if (redisBufferRead(c_) != REDIS_OK) throw std::runtime_error(std::string("redis read: ") + c_->errstr);
  for (;;) {
    void* raw = nullptr;
    if (redisGetReplyFromReader(c_, &raw) != REDIS_OK) throw std::runtime_error("redis: protocol error");
    if (!raw) break;
    out.emplace_back(static_cast<redisReply*>(raw));
  }
  return out;
}

std::string reply_str(const redisReply* r) {
  if (!r || (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_STATUS)) return "";
  return std::string(r->str, r->len);
}

long long reply_int(const redisReply* r) {
  if (!r) return 0;
  if (r->type == REDIS_REPLY_INTEGER) return r->integer;
  if (r->type == REDIS_REPLY_STRING) return std::atoll(std::string(r->str, r->len).c_str());
  return 0;
}

bool reply_ok(const redisReply* r) {
  return r && r->type == REDIS_REPLY_STATUS && r->len == 2 && r->str[0] == 'O' && r->str[1] == 'K';
}

std::string reply_text(const redisReply* r) {
  if (!r) return "(null)";
  switch (r->type) {
    case REDIS_REPLY_INTEGER: return std::to_string(r->integer);
    case REDIS_REPLY_NIL: return "(nil)";
    case REDIS_REPLY_ARRAY: {
      std::string s = "[";
      for (size_t i = 0; i < r->elements; ++i) s += (i ? "," : "") + reply_text(r->element[i]);
      return s + "]";
    }
    default: return std::string(r->str, r->len);
  }
}

// ---------------------------------------------------------------- INFO

ServerSnap snapshot(Redis& r) {
  Reply rep = r.cmd({"INFO", "commandstats", "cpu", "memory"});
  std::string text = reply_str(rep.get());
  if (text.empty()) throw std::runtime_error("INFO failed: " + reply_text(rep.get()));
  ServerSnap s;
  std::istringstream in(text);
  std::string line;
  double user = 0, sys = 0;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.rfind("cmdstat_", 0) == 0) {
      auto colon = line.find(':');
      std::string name = line.substr(8, colon - 8);
      CmdStat c;
      std::string rest = line.substr(colon + 1);
      std::istringstream fields(rest);
      std::string kv;
      while (std::getline(fields, kv, ',')) {
        auto eq = kv.find('=');
        if (eq == std::string::npos) continue;
        std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
        if (k == "calls") c.calls = std::atoll(v.c_str());
        if (k == "usec") c.usec = std::atoll(v.c_str());
      }
      s.cmds[name] = c;
    } else if (line.rfind("used_cpu_user:", 0) == 0) {
      user = std::atof(line.c_str() + 14);
    } else if (line.rfind("used_cpu_sys:", 0) == 0) {
      sys = std::atof(line.c_str() + 13);
    } else if (line.rfind("used_memory:", 0) == 0) {
      s.used_memory = std::atoll(line.c_str() + 12);
    }
  }
  s.cpu_s = user + sys;
  return s;
}

ServerDelta delta(const ServerSnap& a, const ServerSnap& b) {
  // Commands that only a client sends itself (never from inside a script):
  // each is one round trip, or less when pipelined.
  static const std::set<std::string> top = {
      "fcall",         "fcall_ro",       "function|load", "evalsha",    "evalsha_ro",   "eval",
      "eval_ro",       "subscribe",      "unsubscribe",   "psubscribe", "punsubscribe", "script|load",
      "script|exists", "config|get",     "config|set",    "ping",       "hello",        "select",
      "auth",          "client|setname", "client|info",   "client|id"};
  ServerDelta d;
  for (const auto& [name, cb] : b.cmds) {
    if (name == "info") continue;
    long long calls = cb.calls;
    long long usec = cb.usec;
    auto it = a.cmds.find(name);
    if (it != a.cmds.end()) {
      calls -= it->second.calls;
      usec -= it->second.usec;
    }
    if (calls <= 0) continue;
    d.per_command[name] = calls;
    d.commands += calls;
    if (top.count(name)) d.top_level += calls;
    if (top.count(name)) d.top_usec += usec;
    d.per_command_usec[name] = usec;
    if (name == "evalsha" || name == "fcall") {
      d.script_calls += calls;
      d.script_usec += usec;
    }
  }
  d.cpu_us = (b.cpu_s - a.cpu_s) * 1e6;
  return d;
}

// ---------------------------------------------------------------- stats

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  double pos = q * static_cast<double>(v.size() - 1);
  auto lo = static_cast<std::size_t>(std::floor(pos));
  std::size_t hi = std::min(lo + 1, v.size() - 1);
  double frac = pos - static_cast<double>(lo);
  return v[lo] + (v[hi] - v[lo]) * frac;
}

double median(std::vector<double> v) { return quantile(std::move(v), 0.5); }

// ---------------------------------------------------------------- JSON

Json& Json::operator[](const std::string& key) {
  if (kind_ != Kind::object) {
    kind_ = Kind::object;
    obj_.clear();
  }
  for (auto& kv : obj_) {
    if (kv.first == key) return kv.second;
  }
  obj_.emplace_back(key, Json());
  return obj_.back().second;
}

void Json::push(Json v) {
  if (kind_ != Kind::array) {
    kind_ = Kind::array;
    arr_.clear();
  }
  arr_.push_back(std::move(v));
}

std::string Json::dump(int indent) const {
  std::string out;
  dump_to(out, indent, 0);
  return out;
}

namespace {
void escape(std::string& out, const std::string& s) {
  out.push_back('"');
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20) {
          char b[8];
          std::snprintf(b, sizeof b, "\\u%04x", c);
          out += b;
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  out.push_back('"');
}
}  // namespace

void Json::dump_to(std::string& out, int indent, int depth) const {
  auto nl = [&](int d) {
    if (indent <= 0) return;
    out.push_back('\n');
    out.append(static_cast<std::size_t>(indent) * static_cast<std::size_t>(d), ' ');
  };
  if (!raw_.empty()) {
    out += raw_;
    return;
  }
  switch (kind_) {
    case Kind::null: out += "null"; break;
    case Kind::boolean: out += bool_ ? "true" : "false"; break;
    case Kind::number: {
      if (!std::isfinite(num_)) {
        out += "null";
      } else if (num_ == std::floor(num_) && std::fabs(num_) < 1e15) {
        out += std::to_string(static_cast<long long>(num_));
      } else {
        char b[32];
        std::snprintf(b, sizeof b, "%.6g", num_);
        out += b;
      }
      break;
    }
    case Kind::string: escape(out, str_); break;
    case Kind::array: {
      out.push_back('[');
      // Arrays of scalars stay on one line.
      bool flat = true;
      for (const auto& v : arr_) flat = flat && (v.kind_ != Kind::object && v.kind_ != Kind::array);
      for (std::size_t i = 0; i < arr_.size(); ++i) {
        if (i) out.push_back(',');
        if (flat) {
          if (i && indent > 0) out.push_back(' ');
        } else {
          nl(depth + 1);
        }
        arr_[i].dump_to(out, indent, depth + 1);
      }
      if (!flat && !arr_.empty()) nl(depth);
      out.push_back(']');
      break;
    }
    case Kind::object: {
      out.push_back('{');
      for (std::size_t i = 0; i < obj_.size(); ++i) {
        if (i) out.push_back(',');
        nl(depth + 1);
        escape(out, obj_[i].first);
        out += indent > 0 ? ": " : ":";
        obj_[i].second.dump_to(out, indent, depth + 1);
      }
      if (!obj_.empty()) nl(depth);
      out.push_back('}');
      break;
    }
  }
}

}  // namespace fbench
