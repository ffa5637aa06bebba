#pragma once
// A child process running the test helper (or any program), with its stdout
// readable by line: tests/harness/kit/child_process.h with the tests' defaults.
#include <signal.h>

#include <chrono>
#include <string>
#include <vector>

#include "kit/child_process.h"
#include "redis_server.h"

namespace fairlock::test {

class Child {
 public:
  // Runs the test helper with `args`.
  explicit Child(const std::vector<std::string>& args) : Child(helper_path(), args) {}
  // Runs `path` with `args`; stdout (and stderr if `merge_stderr`) captured,
  // stdin inherited.
  Child(const std::string& path, const std::vector<std::string>& args, bool merge_stderr = false)
      : p_(path, args, Pipes{false, merge_stderr}) {}
  // One line of output, or "" if none came within `limit`.
  std::string line(std::chrono::milliseconds limit = std::chrono::milliseconds(20000)) {
    return p_.line(limit).value_or("");
  }
  // Everything the child writes until it closes its output.
  std::string rest(std::chrono::milliseconds limit = std::chrono::milliseconds(30000)) { return p_.rest(limit); }
  void kill(int sig = SIGKILL) { p_.kill(sig); }
  int wait() { return p_.wait(); }
  pid_t pid() const { return p_.pid(); }

 private:
  Process p_;
};

}  // namespace fairlock::test
