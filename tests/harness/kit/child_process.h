#pragma once
// The one child-process helper of the repository, used by the tests' Child
// (tests/harness/child.h), the fault suite's Proc (tests/faults/support.h) and the
// benchmark's worker processes (bench/harness/harness.cpp): fork+exec with the
// child's stdout (and stdin) on pipes, stdout read by line with bounded waits,
// signals, bounded waits for exit, and a watchdog that kills every child if
// the parent dies abruptly. Header-only: the benchmark builds without tests/.
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace fairlock::test {

// In a forked child: runs `path` with `args` (argv[0] = path), or exits 127.
// The child starts as from a terminal: default dispositions (a test run as a
// script's background job has SIGINT and SIGQUIT ignored, which exec keeps)
// and no blocked signal.
[[noreturn]] inline void exec_or_exit(const std::string& path, const std::vector<std::string>& args) {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig : {SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGPIPE, SIGUSR1, SIGUSR2}) ::sigaction(sig, &dfl, nullptr);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(path.c_str()));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  ::execv(path.c_str(), argv.data());
  ::_exit(127);
}

// Reads a pipe by line, with bounded waits.
class LineReader {
 public:
  explicit LineReader(int fd = -1) : fd_(fd) {}
  int fd() const { return fd_; }
  // One line (without '\n'), or nullopt if none came within `limit` or the
  // pipe was closed.
  std::optional<std::string> line(std::chrono::milliseconds limit) {
    const auto end = std::chrono::steady_clock::now() + limit;
    for (;;) {
      auto nl = buf_.find('\n');
      if (nl != std::string::npos) {
        std::string l = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        return l;
      }
      if (!fill(end)) return std::nullopt;
    }
  }
  // Everything written until the pipe closes (or `limit` passes).
  std::string rest(std::chrono::milliseconds limit) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (fill(end)) {
    }
    std::string out;
    out.swap(buf_);
    return out;
  }

 private:
  // Appends what the pipe has, waiting until `end`; false on timeout or EOF.
  bool fill(std::chrono::steady_clock::time_point end) {
    for (;;) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
      if (left.count() <= 0) return false;
      pollfd p{fd_, POLLIN, 0};
      int n = ::poll(&p, 1, static_cast<int>(left.count()));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      char tmp[4096];
      ssize_t got = ::read(fd_, tmp, sizeof tmp);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) return false;
      buf_.append(tmp, static_cast<std::size_t>(got));
      return true;
    }
  }
  int fd_;
  std::string buf_;
};

// Which of the child's standard streams are piped to the parent.
struct Pipes {
  bool stdin_pipe = true;     // a pipe for send(); else the child inherits our stdin
  bool merge_stderr = false;  // the child's stderr goes to the stdout pipe too
};

// A child process running `path` with `args`; its stdout readable by line.
// The destructor SIGKILLs and reaps it if it still runs.
class Process {
 public:
  Process(const std::string& path, const std::vector<std::string>& args, Pipes pipes = Pipes{}) {
    int out[2] = {-1, -1}, in[2] = {-1, -1};
    if (::pipe2(out, O_CLOEXEC) != 0 || (pipes.stdin_pipe && ::pipe2(in, O_CLOEXEC) != 0))
      throw std::runtime_error("pipe");
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork");
    if (pid_ == 0) {
      ::dup2(out[1], 1);
      if (pipes.merge_stderr) ::dup2(out[1], 2);
      if (pipes.stdin_pipe) ::dup2(in[0], 0);
      exec_or_exit(path, args);
    }
    ::close(out[1]);
    out_ = LineReader(out[0]);
    if (pipes.stdin_pipe) {
      ::close(in[0]);
      in_ = in[1];
    }
  }
  ~Process() {
    if (pid_ > 0) {
      ::kill(pid_, SIGCONT);  // a stopped child is killed as well
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (out_.fd() >= 0) ::close(out_.fd());
    if (in_ >= 0) ::close(in_);
  }
  Process(const Process&) = delete;  // owns a pid and pipes
  Process& operator=(const Process&) = delete;

  // One line of stdout, or nullopt if none came within `limit` (or EOF).
  std::optional<std::string> line(std::chrono::milliseconds limit = std::chrono::milliseconds(30000)) {
    return out_.line(limit);
  }
  // Waits for a line starting with `prefix`, skipping others; nullopt on timeout.
  std::optional<std::string> expect(const std::string& prefix,
                                    std::chrono::milliseconds limit = std::chrono::milliseconds(30000)) {
    const auto end = std::chrono::steady_clock::now() + limit;
    for (;;) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
      if (left.count() <= 0) return std::nullopt;
      auto l = line(left);
      if (!l) return std::nullopt;
      if (l->rfind(prefix, 0) == 0) return l;
    }
  }
  // Everything the child writes until it closes its output.
  std::string rest(std::chrono::milliseconds limit = std::chrono::milliseconds(30000)) { return out_.rest(limit); }
  // Writes line + '\n' to the child's stdin. A child that died must not kill
  // the caller with SIGPIPE: it is blocked on this thread for the write and a
  // pending one swallowed (the process keeps its disposition, so a SIGPIPE
  // raised elsewhere still shows). False if the child is gone.
  bool send(const std::string& line) {
    sigset_t pipe_set, old;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    const std::string s = line + "\n";
    const bool ok = write_all(s);
    if (!ok && errno == EPIPE) {
      timespec zero{0, 0};
      sigtimedwait(&pipe_set, nullptr, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    return ok;
  }
  void kill(int sig = SIGKILL) {
    if (pid_ > 0) ::kill(pid_, sig);
  }
  // Waits for exit at most `limit`; the exit code (128+signal if signalled),
  // or nullopt if it is still running.
  std::optional<int> wait_for(std::chrono::milliseconds limit) {
    if (pid_ <= 0) return std::nullopt;
    const auto end = std::chrono::steady_clock::now() + limit;
    for (;;) {
      int status = 0;
      pid_t r = ::waitpid(pid_, &status, WNOHANG);
      if (r == pid_) return reaped(status);
      if (r < 0 && errno != EINTR) {  // not our child (any more)
        pid_ = -1;
        return std::nullopt;
      }
      if (std::chrono::steady_clock::now() >= end) return std::nullopt;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  // Waits for exit however long it takes; the exit code as for wait_for.
  int wait() {
    if (pid_ <= 0) return -1;
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    return reaped(status);
  }
  // Waits at most `limit` for exit, then SIGKILLs it; the exit code.
  int finish(std::chrono::milliseconds limit) {
    if (auto code = wait_for(limit)) return *code;
    kill(SIGKILL);
    return wait();
  }
  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }

 private:
  int reaped(int status) {
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  bool write_all(const std::string& s) {
    const char* p = s.data();
    std::size_t left = s.size();
    while (left > 0) {
      ssize_t n = ::write(in_, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;  // the child is gone; the caller notices elsewhere
      p += n;
      left -= static_cast<std::size_t>(n);
    }
    return true;
  }
  pid_t pid_ = -1;
  LineReader out_;
  int in_ = -1;
};

// For test mains that start servers and child processes. If this process
// dies abruptly (a sanitizer's _exit, abort, SIGKILL by a timeout), the
// destructors never run and the redis-servers and children it started would
// outlive it, holding ctest's output pipe open until ctest's timeout. So:
// this process leads its own process group (which they inherit), and a
// watchdog child waits for it to be gone, then kills the group.
inline void reap_children_when_we_die() {
  if (::isatty(0)) return;           // interactive: keep Ctrl-C reaching us
  if (::setpgid(0, 0) != 0) return;  // e.g. a session leader: go without
  int fds[2];
  if (::pipe(fds) != 0) return;
  ::fcntl(fds[1], F_SETFD, FD_CLOEXEC);  // only this process holds the write end
  pid_t pid = ::fork();
  if (pid < 0) return;
  if (pid == 0) {
    ::close(fds[1]);
    ::close(1);  // not a holder of ctest's output pipe
    ::close(2);
    char c = 0;
    while (::read(fds[0], &c, 1) != 0) {
      if (errno != EINTR) break;
    }
    ::kill(-::getpgrp(), SIGKILL);  // whatever is left, and this watchdog
    ::_exit(0);
  }
  ::close(fds[0]);
}

}  // namespace fairlock::test
