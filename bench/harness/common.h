#pragma once
// Shared by the benchmark driver, its worker processes and the Google
// Benchmark program: clocks, a small hiredis wrapper, INFO parsing,
// percentiles and a minimal JSON value.
#include <hiredis/hiredis.h>

#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace fbench {

// CLOCK_MONOTONIC in nanoseconds: one clock for every process on the
// machine, so timestamps taken in different worker processes compare.
std::int64_t now_ns();
// CLOCK_REALTIME in milliseconds (only the sorted-set baseline uses it: the
// published pattern trusts client clocks).
std::int64_t wall_ms();
std::int64_t wall_us();
void sleep_until_ns(std::int64_t t);
void sleep_ns(std::int64_t d);

struct ReplyFree {
  void operator()(redisReply* r) const noexcept {
    if (r) freeReplyObject(r);
  }
};
using Reply = std::unique_ptr<redisReply, ReplyFree>;

// One blocking hiredis connection with a command timeout. I/O errors throw.
class Redis {
 public:
  Redis(const std::string& host, int port, int timeout_ms = 5000);
  ~Redis();
  Redis(const Redis&) = delete;
  Redis& operator=(const Redis&) = delete;

  Reply cmd(const std::vector<std::string>& argv);
  void append(const std::vector<std::string>& argv);
  Reply read();
  // Pipelines the commands: one round trip.
  std::vector<Reply> pipeline(const std::vector<std::vector<std::string>>& cmds);
  // Subscriber use: sends what append() queued, without reading.
  void flush();
  // Waits up to timeout_ms for data, then returns every complete reply.
  std::vector<Reply> read_available(int timeout_ms);

 private:
  redisContext* c_ = nullptr;
};

std::string reply_str(const redisReply* r);
long long reply_int(const redisReply* r);
bool reply_ok(const redisReply* r);           // +OK
std::string reply_text(const redisReply* r);  // for error messages

// INFO commandstats + cpu + memory, parsed.
struct CmdStat {
  long long calls = 0;
  long long usec = 0;
};
struct ServerSnap {
  std::map<std::string, CmdStat> cmds;
  double cpu_s = 0;  // used_cpu_user + used_cpu_sys
  long long used_memory = 0;
};
ServerSnap snapshot(Redis& r);

// What the server did between two snapshots.
struct ServerDelta {
  long long commands = 0;      // every command, those run inside scripts included (INFO excluded)
  long long top_level = 0;     // commands a client sent itself (EVALSHA, SUBSCRIBE, ...): round trips
  long long script_calls = 0;  // FCALL and EVALSHA
  long long script_usec = 0;
  // Redis's own time (commandstats usec) for the commands only clients send
  // (EVALSHA, SUBSCRIBE, ...); a script's usec includes the commands it ran.
  long long top_usec = 0;
  double cpu_us = 0;
  std::map<std::string, long long> per_command;
  std::map<std::string, long long> per_command_usec;
};
ServerDelta delta(const ServerSnap& a, const ServerSnap& b);

double quantile(std::vector<double> v, double q);  // linear interpolation, q in [0, 1]
double median(std::vector<double> v);

// A minimal ordered JSON value.
class Json {
 public:
  enum class Kind { null, boolean, number, string, array, object };
  Json() = default;
  // Implicit by design, as in any JSON value type: j["ms"] = 1.5; j["name"] = "x";
  // NOLINTBEGIN(google-explicit-constructor)
  Json(double v) : kind_(Kind::number), num_(v) {}
  Json(int v) : kind_(Kind::number), num_(v) {}
  Json(long v) : kind_(Kind::number), num_(static_cast<double>(v)) {}
  Json(long long v) : kind_(Kind::number), num_(static_cast<double>(v)) {}
  Json(unsigned long v) : kind_(Kind::number), num_(static_cast<double>(v)) {}
  Json(unsigned long long v) : kind_(Kind::number), num_(static_cast<double>(v)) {}
  Json(bool v) : kind_(Kind::boolean), bool_(v) {}
  Json(const char* v) : kind_(Kind::string), str_(v) {}
  Json(std::string v) : kind_(Kind::string), str_(std::move(v)) {}
  // NOLINTEND(google-explicit-constructor)
  static Json object() {
    Json j;
    j.kind_ = Kind::object;
    return j;
  }
  static Json array() {
    Json j;
    j.kind_ = Kind::array;
    return j;
  }
  static Json raw(std::string text) {  // pre-serialised JSON, embedded as is
    Json j;
    j.kind_ = Kind::null;
    j.raw_ = std::move(text);
    return j;
  }
  Json& operator[](const std::string& key);  // object: insert or find
  void push(Json v);                         // array
  std::string dump(int indent = 0) const;
  Kind kind() const { return kind_; }

 private:
  void dump_to(std::string& out, int indent, int depth) const;
  Kind kind_ = Kind::null;
  bool bool_ = false;
  double num_ = 0;
  std::string str_;
  std::string raw_;
  std::vector<std::pair<std::string, Json>> obj_;
  std::vector<Json> arr_;
};

std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));

}  // namespace fbench
