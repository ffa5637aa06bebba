#pragma once
// Shared by the fault-injection tests and their worker processes:
//   Rec   a plain hiredis connection to the *recorder* redis-server (a second
//         instance that is never faulted), used for grant records and as the
//         common clock (Redis TIME; on one host it is the same clock the lock
//         server uses for its deadlines);
//   Proc  a child process with stdin/stdout pipes, killable, with bounded waits
//         (the repository's one child-process helper, tests/harness/kit/child_process.h).
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "kit/child_process.h"

struct redisContext;
struct redisReply;

namespace fairlock::faults {

// Microseconds: Redis TIME of the recorder, or CLOCK_MONOTONIC (mono_us).
using Micros = std::int64_t;

// CLOCK_MONOTONIC in microseconds: one clock for every process on the host,
// never stepped. Belief intervals and test pauses are measured with it.
Micros mono_us();
// CLOCK_REALTIME in microseconds: the clock of Redis TIME on this host.
Micros realtime_us();

class Rec {
 public:
  explicit Rec(int port, const std::string& host = "127.0.0.1");
  ~Rec();
  Rec(const Rec&) = delete;
  Rec& operator=(const Rec&) = delete;

  Micros time_us();
  void rpush(const std::string& key, const std::string& value);
  void hset(const std::string& key, const std::string& field, const std::string& value);
  std::vector<std::string> lrange(const std::string& key);
  std::map<std::string, std::string> hgetall(const std::string& key);
  // Any command; the reply as text (arrays joined by '\n', errors "ERR:...").
  std::string cmd(const std::vector<std::string>& argv);

 private:
  redisReply* raw(const std::vector<std::string>& argv);
  redisContext* c_ = nullptr;
};

// A Rec shared by several threads (e.g. the on_lost callback of every lock).
class SharedRec {
 public:
  explicit SharedRec(int port) : rec_(port) {}
  Micros time_us() {
    std::lock_guard<std::mutex> lk(mu_);
    return rec_.time_us();
  }
  void rpush(const std::string& key, const std::string& value) {
    std::lock_guard<std::mutex> lk(mu_);
    rec_.rpush(key, value);
  }

 private:
  std::mutex mu_;
  Rec rec_;
};

using Proc = test::Process;  // stdin and stdout piped

// Splits on single spaces.
std::vector<std::string> split(const std::string& s, char sep = ' ');
// An integer environment variable, or `fallback`.
long long env_int(const char* name, long long fallback);
// The recorder list key for one test: unique per test and process.
std::string ev_key(const std::string& base);

}  // namespace fairlock::faults
