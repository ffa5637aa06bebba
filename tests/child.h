#pragma once
// A child process running the test helper, with its stdout readable by line.
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "line_reader.h"
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
      exec_or_exit(path, args);
    }
    ::close(fds[1]);
    out_ = LineReader(fds[0]);
  }
  Child(const Child&) = delete;  // owns a pid and a pipe
  Child& operator=(const Child&) = delete;
  ~Child() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    ::close(out_.fd());
  }
  // One line of output, or "" if none came within `limit`.
  std::string line(std::chrono::milliseconds limit = std::chrono::milliseconds(20000)) {
    return out_.line(limit).value_or("");
  }
  // Everything the child writes until it closes its output.
  std::string rest(std::chrono::milliseconds limit = std::chrono::milliseconds(30000)) { return out_.rest(limit); }
  void kill(int sig = SIGKILL) { ::kill(pid_, sig); }
  int wait() {
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

 private:
  pid_t pid_ = -1;
  LineReader out_;
};

}  // namespace fairlock::test
