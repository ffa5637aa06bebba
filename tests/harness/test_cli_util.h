#pragma once
// Running the `fairlock` command from the tests: its arguments against the
// shared server (or another), its output and status, scratch files.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "child.h"
#include "test_util.h"

namespace fairlock::test {

inline std::vector<std::string> cli(std::vector<std::string> args, const std::string& url = server().url()) {
  std::vector<std::string> out{"--url", url};
  out.insert(out.end(), args.begin(), args.end());
  return out;
}

struct CliResult {
  int status;
  std::string output;  // stdout and stderr
};

inline CliResult run_cli(std::vector<std::string> args, const std::string& url = server().url()) {
  Child c(FAIRLOCK_CLI_PATH, cli(std::move(args), url), true);
  std::string out = c.rest();
  return {c.wait(), out};
}

// An environment variable set while this lives (the `fairlock` processes
// started meanwhile inherit it), unset again however the test ends.
struct ScopedEnv {
  ScopedEnv(const char* name, const char* value) : name_(name) { ::setenv(name, value, 1); }
  ~ScopedEnv() { ::unsetenv(name_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
};

// A scratch file name (the file exists, empty); removed by the destructor.
struct TempFile {
  std::string path;
  TempFile() {
    char tmpl[] = "/tmp/fairlock-cli-XXXXXX";
    const int fd = ::mkstemp(tmpl);
    if (fd >= 0) ::close(fd);
    path = tmpl;
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() { std::remove(path.c_str()); }
  std::string text() const {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  // How many lines start with `prefix`.
  int count(const std::string& prefix) const {
    std::istringstream in(text());
    int n = 0;
    for (std::string l; std::getline(in, l);) n += l.rfind(prefix, 0) == 0;
    return n;
  }
};

}  // namespace fairlock::test
