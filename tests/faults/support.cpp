#include "support.h"

#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>

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

// ---------------------------------------------------------------- Proc

Proc::Proc(const std::string& path, const std::vector<std::string>& args) {
  int out[2], in[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(in, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("fork");
  if (pid_ == 0) {
    ::dup2(out[1], 1);
    ::dup2(in[0], 0);
    test::exec_or_exit(path, args);
  }
  ::close(out[1]);
  ::close(in[0]);
  out_ = test::LineReader(out[0]);
  in_ = in[1];
}

Proc::~Proc() {
  if (pid_ > 0) {
    ::kill(pid_, SIGCONT);
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  if (out_.fd() >= 0) ::close(out_.fd());
  if (in_ >= 0) ::close(in_);
}

std::optional<std::string> Proc::line(std::chrono::milliseconds limit) { return out_.line(limit); }

std::optional<std::string> Proc::expect(const std::string& prefix, std::chrono::milliseconds limit) {
  auto end = std::chrono::steady_clock::now() + limit;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    auto l = line(left);
    if (!l) return std::nullopt;
    if (l->rfind(prefix, 0) == 0) return l;
  }
}

void Proc::send(const std::string& line) {
  // A child that died must not kill the test with SIGPIPE: block it on this
  // thread for the write and swallow a pending one (the process keeps the
  // default disposition, so a SIGPIPE raised by the library still shows).
  sigset_t pipe_set, old;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  std::string s = line + "\n";
  const char* p = s.data();
  size_t left = s.size();
  bool broke = false;
  while (left > 0) {
    ssize_t n = ::write(in_, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {  // the child is gone; the test notices elsewhere
      broke = errno == EPIPE;
      break;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (broke) {
    timespec zero{0, 0};
    sigtimedwait(&pipe_set, nullptr, &zero);
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

void Proc::kill(int sig) {
  if (pid_ > 0) ::kill(pid_, sig);
}

std::optional<int> Proc::wait_for(std::chrono::milliseconds limit) {
  if (pid_ <= 0) return std::nullopt;
  auto end = std::chrono::steady_clock::now() + limit;
  for (;;) {
    int status = 0;
    pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      pid_ = -1;
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    if (std::chrono::steady_clock::now() >= end) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// ---------------------------------------------------------------- misc

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
