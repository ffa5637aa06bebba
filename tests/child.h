#pragma once
// A child process running the test helper, with its stdout readable by line.
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "redis_server.h"

namespace fairlock::test {

class Child {
 public:
  // Runs the test helper with `args`.
  explicit Child(const std::vector<std::string>& args) : Child(helper_path(), args) {}
  // Runs `path` with `args`; stdout (and stderr if `merge_stderr`) captured.
  Child(const std::string& path, const std::vector<std::string>& args, bool merge_stderr = false) {
    int fds[2];
    if (::pipe(fds) != 0) throw std::runtime_error("pipe");
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(fds[1], 1);
      if (merge_stderr) ::dup2(fds[1], 2);
      ::close(fds[0]);
      ::close(fds[1]);
      std::vector<char*> argv;
      argv.push_back(const_cast<char*>(path.c_str()));
      for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      ::execv(path.c_str(), argv.data());
      ::_exit(127);
    }
    ::close(fds[1]);
    fd_ = fds[0];
  }
  ~Child() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    ::close(fd_);
  }
  // One line of output, or "" if none came within `limit`.
  std::string line(std::chrono::milliseconds limit = std::chrono::milliseconds(20000)) {
    auto end = std::chrono::steady_clock::now() + limit;
    for (;;) {
      auto nl = buf_.find('\n');
      if (nl != std::string::npos) {
        std::string l = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        return l;
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
      if (left.count() <= 0) return "";
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return "";
      char tmp[256];
      ssize_t n = ::read(fd_, tmp, sizeof tmp);
      if (n <= 0) return "";
      buf_.append(tmp, static_cast<size_t>(n));
    }
  }
  // Everything the child writes until it closes its output.
  std::string rest(std::chrono::milliseconds limit = std::chrono::milliseconds(30000)) {
    auto end = std::chrono::steady_clock::now() + limit;
    for (;;) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
      pollfd p{fd_, POLLIN, 0};
      if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
      char tmp[4096];
      ssize_t n = ::read(fd_, tmp, sizeof tmp);
      if (n <= 0) break;
      buf_.append(tmp, static_cast<size_t>(n));
    }
    std::string out;
    out.swap(buf_);
    return out;
  }
  void kill(int sig = SIGKILL) { ::kill(pid_, sig); }
  int wait() {
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

 private:
  pid_t pid_ = -1;
  int fd_ = -1;
  std::string buf_;
};

}  // namespace fairlock::test
