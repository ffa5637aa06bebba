#pragma once
// A real redis-server owned by a test: temporary directory, free loopback
// port, no persistence unless asked. Fault tests can pause, kill and restart it.
#include <sys/types.h>

#include <string>
#include <vector>

struct redisReply;

namespace fairlock::test {

class RedisServer {
 public:
  // extra: additional "--option value" arguments.
  explicit RedisServer(std::vector<std::string> extra = {});
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  int port() const { return port_; }
  std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }
  void pause();    // SIGSTOP
  void resume();   // SIGCONT
  void kill();     // SIGKILL and reap
  void restart();  // start again on the same port and directory
  // Runs one command through redis-cli-free hiredis; returns the reply as text
  // (arrays joined by '\n', nil as "(nil)", errors prefixed with "ERR:").
  std::string cmd(const std::vector<std::string>& argv) const;

 private:
  void start();
  std::vector<std::string> extra_;
  std::string dir_;
  int port_ = 0;
  pid_t pid_ = -1;
};

// A reply as text, the way RedisServer::cmd returns it.
std::string reply_text(const redisReply* r);

// Shared server for most tests (started by the test main).
RedisServer& server();
// A unique, hash-tag-free name for one test.
std::string unique_name(const std::string& base);
// Path of the multi-process helper binary.
std::string helper_path();

}  // namespace fairlock::test
