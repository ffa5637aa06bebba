// The command line of `fairlock`: options, durations and counts, and the Client options they make.
#pragma once

#include <fairlock/fairlock.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace fairlock::cli {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// "5s", "250ms", "1.5" (seconds); zero only if `allow_zero`.
std::chrono::milliseconds parse_duration(const std::string& s, const char* what, bool allow_zero = false);
long long parse_count(const std::string& s, const char* what, long long lo, long long hi);

struct Args {
  std::string url, prefix = "fairlock", command;
  fairlock::TlsOptions tls;
  bool use_tls = false, tls_flags = false;  // --tls; any other TLS flag given
  std::vector<std::string> positional, exec;
  // The subcommand's own options by long name ("--wait"); flags map to "".
  std::map<std::string, std::string> values;
  bool help = false, version = false, allow_evicting = false;
  bool has(const std::string& option) const { return values.count(option) != 0; }
};

Args parse(int argc, char** argv);
// `run` waits, so it takes wake signals; the other commands only read or
// evict and need no subscriber.
fairlock::Options client_options(const Args& a, fairlock::Notify notify = fairlock::Notify::poll);
void need_positional(const Args& a, std::size_t n, const char* what);

}  // namespace fairlock::cli
