#pragma once
// Child processes of tests: reading their output pipe by line with bounded
// waits, and exec in the forked child. Shared by the test helpers' Child (tests/child.h) and the fault suite's Proc.
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace fairlock::test {

// In a forked child: runs `path` with `args` (argv[0] = path), or exits 127.
[[noreturn]] inline void exec_or_exit(const std::string& path, const std::vector<std::string>& args) {
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(path.c_str()));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  ::execv(path.c_str(), argv.data());
  ::_exit(127);
}

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

}  // namespace fairlock::test
