#pragma once
// A real redis-server owned by a test: temporary directory, free loopback
// port, no persistence unless asked. Fault tests can pause, kill and restart it.
#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

struct redisReply;

namespace fairlock::test {

// A TLS port beside the plain one (which tests and readiness checks use).
struct TlsPort {
  std::string cert_file, key_file, ca_file;  // the server's certificate, key, and CA for client certificates
  bool auth_clients = false;                 // tls-auth-clients
  std::vector<std::string> extra;            // e.g. {"--tls-protocols", "TLSv1.2"}
};

struct FreeReply {
  void operator()(redisReply* r) const;
};
using Reply = std::unique_ptr<redisReply, FreeReply>;

// What to run: a sentinel runs from a config file of its own (which it
// rewrites), named before the options.
struct Launch {
  std::string program = "redis-server";
  std::string config_file;  // none if empty
  // The default user's password (--requirepass), which the harness gives
  // (AUTH) before its readiness check and every cmd(); none if empty.
  std::string requirepass;
  // A cluster node: also a free port for its cluster bus (--cluster-port),
  // chosen with the others (the default, port + 10000, may be taken or past 65535).
  bool cluster_bus = false;
};

class RedisServer {
 public:
  // extra: additional "--option value" arguments.
  explicit RedisServer(std::vector<std::string> extra = {});
  RedisServer(std::vector<std::string> extra, TlsPort tls, Launch launch = {});
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  int port() const { return port_; }
  std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }
  int tls_port() const { return tls_port_; }
  int cluster_port() const { return cluster_port_; }  // 0 without Launch::cluster_bus
  std::string tls_url(const std::string& host = "127.0.0.1") const {
    return "rediss://" + host + ":" + std::to_string(tls_port_);
  }
  void pause();    // SIGSTOP
  void resume();   // SIGCONT
  void kill();     // SIGKILL and reap
  void restart();  // start again on the same port and directory
  // Starts again on the same ports and directory with `extra` instead of the
  // first options (e.g. another --replicaof); TLS options stay.
  void restart(std::vector<std::string> extra);
  bool up() const { return pid_ > 0 && !paused_; }  // running, not paused
  std::string log_file() const { return dir_ + "/redis.log"; }
  // Runs one command through redis-cli-free hiredis; returns the reply as text
  // (arrays joined by '\n', nil as "(nil)", errors prefixed with "ERR:").
  std::string cmd(const std::vector<std::string>& argv) const;
  // The reply of one command (command_reply() with the server's requirepass).
  Reply reply(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) const;

 private:
  void start();
  std::vector<std::string> extra_;
  std::vector<std::string> tls_args_;
  Launch launch_;
  std::string dir_;
  int port_ = 0;
  int tls_port_ = 0;
  int cluster_port_ = 0;
  pid_t pid_ = -1;
  bool paused_ = false;
};

// A reply as text, the way RedisServer::cmd returns it.
std::string reply_text(const redisReply* r);

// The reply of one command to the server on 127.0.0.1:`port`, or null if none
// came within `timeout` (zero: no limit, also for the connection), after AUTH
// with `password` if not empty. Throws if it cannot connect or AUTH fails.
Reply command_reply(int port, const std::vector<std::string>& argv,
                    std::chrono::milliseconds timeout = std::chrono::milliseconds(0), const std::string& password = "");

// The commands in the server's slow log, oldest first, each as its
// arguments (the log keeps at most 32 of 128 bytes each).
std::vector<std::vector<std::string>> slow_log(const RedisServer& s);

// Shared server for most tests (started by the test main).
RedisServer& server();
// A unique, hash-tag-free name for one test.
std::string unique_name(const std::string& base);
// Path of the multi-process helper binary.
std::string helper_path();

}  // namespace fairlock::test
