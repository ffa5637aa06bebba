#include "redis_server.h"

#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <system_error>
#include <thread>

namespace fairlock::test {

namespace {
int free_port() {
  int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  if (::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) throw std::runtime_error("bind failed");
  socklen_t len = sizeof a;
  ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  int port = ntohs(a.sin_port);
  ::close(s);
  return port;
}

// AUTH with `password` (nothing to do if empty); false if refused or no reply.
bool authenticated(redisContext* c, const std::string& password) {
  if (password.empty()) return true;
  auto* r = static_cast<redisReply*>(redisCommand(c, "AUTH %b", password.data(), password.size()));
  const bool ok = r && r->type == REDIS_REPLY_STATUS;
  if (r) freeReplyObject(r);
  return ok;
}

}  // namespace

std::string reply_text(const redisReply* r) {
  switch (r->type) {
    case REDIS_REPLY_NIL: return "(nil)";
    case REDIS_REPLY_INTEGER: return std::to_string(r->integer);
    case REDIS_REPLY_ERROR: return "ERR:" + std::string(r->str, r->len);
    case REDIS_REPLY_ARRAY: {
      std::string out;
      for (size_t i = 0; i < r->elements; ++i) out += (i ? "\n" : "") + reply_text(r->element[i]);
      return out;
    }
    default: return std::string(r->str, r->len);
  }
}

RedisServer::RedisServer(std::vector<std::string> extra) : RedisServer(std::move(extra), TlsPort{}) {}

RedisServer::RedisServer(std::vector<std::string> extra, TlsPort tls, Launch launch)
    : extra_(std::move(extra)), launch_(std::move(launch)) {
  char tmpl[] = "/tmp/fairlock-redis-XXXXXX";
  if (!::mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
  dir_ = tmpl;
  for (int attempt = 0;; ++attempt) {
    port_ = free_port();
    if (launch_.cluster_bus) cluster_port_ = free_port();
    if (!tls.cert_file.empty()) {
      tls_port_ = free_port();
      tls_args_ = {"--tls-port",         std::to_string(tls_port_),
                   "--tls-cert-file",    tls.cert_file,
                   "--tls-key-file",     tls.key_file,
                   "--tls-ca-cert-file", tls.ca_file,
                   "--tls-auth-clients", tls.auth_clients ? "yes" : "no"};
      tls_args_.insert(tls_args_.end(), tls.extra.begin(), tls.extra.end());
    }
    try {
      start();
      return;
    } catch (const std::exception&) {
      if (attempt == 5) throw;
    }
  }
}

RedisServer::~RedisServer() {
  if (pid_ > 0) {
    ::kill(pid_, SIGCONT);
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);  // gone (reaped) before its directory goes
  }
  // Best effort, but not at the first "Directory not empty": a fork child of
  // the server (an AOF rewrite or RDB save, in tests that persist) can still
  // be writing its temporary file there for a moment.
  for (int i = 0; i < 40; ++i) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
    if (!ec && !std::filesystem::exists(dir_, ec)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

void RedisServer::start() {
  std::vector<std::string> args = {launch_.program};
  if (!launch_.config_file.empty()) args.push_back(launch_.config_file);
  const std::vector<std::string> base = {
      "--port", std::to_string(port_), "--bind", "127.0.0.1",   "--dir", dir_,        "--save",
      "",       "--appendonly",        "no",     "--daemonize", "no",    "--logfile", log_file()};
  args.insert(args.end(), base.begin(), base.end());
  if (!launch_.requirepass.empty()) args.insert(args.end(), {"--requirepass", launch_.requirepass});
  if (cluster_port_ > 0) args.insert(args.end(), {"--cluster-port", std::to_string(cluster_port_)});
  for (const auto& e : extra_) args.push_back(e);
  for (const auto& e : tls_args_) args.push_back(e);
  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execvp(launch_.program.c_str(), argv.data());
    ::_exit(127);
  }
  pid_ = pid;
  // Up to 10 s (a restart may have data to load: PING answers -LOADING until
  // it is done). The server that answers must be ours: another test process
  // may have taken the port between free_port() and our server's bind (ours
  // then exits), so a PONG counts only from INFO's process_id of our child.
  const std::string ours = "process_id:" + std::to_string(pid_) + "\r\n";
  for (int i = 0; i < 400; ++i) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      throw std::runtime_error("redis-server exited at start");
    }
    redisContext* c = redisConnect("127.0.0.1", port_);
    if (c && !c->err && authenticated(c, launch_.requirepass)) {
      auto* r = static_cast<redisReply*>(redisCommand(c, "PING"));
      bool ok = r && r->type == REDIS_REPLY_STATUS;
      if (r) freeReplyObject(r);
      if (ok) {
        r = static_cast<redisReply*>(redisCommand(c, "INFO server"));
        ok = r && r->type == REDIS_REPLY_STRING && std::string(r->str, r->len).find(ours) != std::string::npos;
        if (r) freeReplyObject(r);
      }
      redisFree(c);
      if (ok) return;
    } else if (c) {
      redisFree(c);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  kill();
  throw std::runtime_error("redis-server did not answer");
}

void RedisServer::pause() {
  ::kill(pid_, SIGSTOP);
  paused_ = true;
}

void RedisServer::resume() {
  ::kill(pid_, SIGCONT);
  paused_ = false;
}

void RedisServer::kill() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  paused_ = false;
}

void RedisServer::restart() {
  kill();
  start();
}

void RedisServer::restart(std::vector<std::string> extra) {
  extra_ = std::move(extra);
  restart();
}

void FreeReply::operator()(redisReply* r) const { freeReplyObject(r); }

Reply command_reply(int port, const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                    const std::string& password) {
  const timeval tv{static_cast<time_t>(timeout.count() / 1000),
                   static_cast<suseconds_t>(timeout.count() % 1000 * 1000)};
  redisContext* c =
      timeout.count() > 0 ? redisConnectWithTimeout("127.0.0.1", port, tv) : redisConnect("127.0.0.1", port);
  if (!c || c->err) {
    if (c) redisFree(c);
    throw std::runtime_error("cannot connect to test redis");
  }
  if (timeout.count() > 0) redisSetTimeout(c, tv);
  if (!authenticated(c, password)) {
    redisFree(c);
    throw std::runtime_error("test redis refused AUTH");
  }
  std::vector<const char*> ptrs;
  std::vector<size_t> lens;
  for (const auto& a : argv) {
    ptrs.push_back(a.data());
    lens.push_back(a.size());
  }
  Reply r(static_cast<redisReply*>(redisCommandArgv(c, static_cast<int>(argv.size()), ptrs.data(), lens.data())));
  redisFree(c);
  return r;
}

Reply RedisServer::reply(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) const {
  return command_reply(port_, argv, timeout, launch_.requirepass);
}

std::string RedisServer::cmd(const std::vector<std::string>& argv) const {
  Reply r = reply(argv, std::chrono::milliseconds(0));
  return r ? reply_text(r.get()) : "ERR:no reply";
}

std::vector<std::vector<std::string>> slow_log(const RedisServer& s) {
  std::vector<std::vector<std::string>> log;
  const Reply r = s.reply({"SLOWLOG", "GET", "-1"}, std::chrono::milliseconds(0));
  if (!r || r->type != REDIS_REPLY_ARRAY) return log;
  for (size_t i = r->elements; i-- > 0;) {  // the log comes newest first
    const redisReply* entry = r->element[i];
    if (entry->type != REDIS_REPLY_ARRAY || entry->elements < 4) continue;
    const redisReply* args = entry->element[3];
    std::vector<std::string> argv;
    for (size_t j = 0; j < args->elements; ++j) argv.emplace_back(args->element[j]->str, args->element[j]->len);
    log.push_back(std::move(argv));
  }
  return log;
}

std::string unique_name(const std::string& base) {
  static std::atomic<int> n{0};
  return base + ":" + std::to_string(::getpid()) + ":" + std::to_string(n.fetch_add(1));
}

}  // namespace fairlock::test
