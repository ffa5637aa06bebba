#include "args.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <utility>

namespace fairlock::cli {

std::chrono::milliseconds parse_duration(const std::string& s, const char* what) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(s, &used);
  } catch (const std::exception&) {
    throw UsageError(std::string(what) + ": not a duration: '" + s + "'");
  }
  const std::string unit = s.substr(used);
  const double factor = unit == "ms"                  ? 1
                        : unit == "s" || unit.empty() ? 1e3
                        : unit == "m"                 ? 6e4
                        : unit == "h"                 ? 3.6e6
                                                      : 0;
  if (factor == 0) throw UsageError(std::string(what) + ": unknown unit in '" + s + "' (use ms, s, m or h)");
  const double ms = v * factor;
  if (!(ms > 0) || ms > 2147483647.0) throw UsageError(std::string(what) + ": must be positive and below 24 days");
  return std::chrono::milliseconds(std::max(1LL, std::llround(ms)));  // 0.2ms still means "some time"
}

long long parse_count(const std::string& s, const char* what, long long lo, long long hi) {
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end || errno || v < lo || v > hi) {
    throw UsageError(std::string(what) + ": expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                     "], got '" + s + "'");
  }
  return v;
}

namespace {

void tls_from_environment(fairlock::TlsOptions& t) {
  const std::pair<const char*, std::string*> vars[] = {{"FAIRLOCK_CACERT", &t.ca_file},
                                                       {"FAIRLOCK_CACERTDIR", &t.ca_dir},
                                                       {"FAIRLOCK_CERT", &t.cert_file},
                                                       {"FAIRLOCK_KEY", &t.key_file},
                                                       {"FAIRLOCK_SNI", &t.server_name}};
  for (const auto& [name, field] : vars) {
    const char* v = std::getenv(name);
    if (v && *v) *field = v;
  }
}

// One of the TLS options with a value; false if `key` is none of them.
bool take_tls_option(const std::string& key, const std::string& value, fairlock::TlsOptions& t) {
  if (key == "--tls-min-version") {
    if (value != "1.2" && value != "1.3") throw UsageError("--tls-min-version: 1.2 or 1.3");
    t.min_version = value == "1.3" ? fairlock::TlsVersion::v1_3 : fairlock::TlsVersion::v1_2;
    return true;
  }
  const std::pair<const char*, std::string*> files[] = {{"--cacert", &t.ca_file},
                                                        {"--cacertdir", &t.ca_dir},
                                                        {"--cert", &t.cert_file},
                                                        {"--key", &t.key_file},
                                                        {"--sni", &t.server_name}};
  const auto* found = std::find_if(std::begin(files), std::end(files), [&](const auto& f) { return key == f.first; });
  if (found == std::end(files)) return false;
  *found->second = value;
  return true;
}

}  // namespace

Args parse(int argc, char** argv) {
  Args a;
  const char* env = std::getenv("FAIRLOCK_URL");
  a.url = env && *env ? env : "redis://127.0.0.1:6379";
  tls_from_environment(a.tls);
  const std::vector<std::string> with_value = {"--url",      "--prefix", "--permits",        "--lease",     "--wait",
                                               "--interval", "--count",  "--cacert",         "--cacertdir", "--cert",
                                               "--key",      "--sni",    "--tls-min-version"};
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    if (s == "--") {
      for (++i; i < argc; ++i) a.exec.emplace_back(argv[i]);
      break;
    }
    if (s == "--help" || s == "-h") {
      a.help = true;
      continue;
    }
    if (s == "--json") {
      a.json = true;
    } else if (s == "--kill-on-loss") {
      a.kill_on_loss = true;
    } else if (s == "--allow-evicting-server") {
      a.allow_evicting = true;
    } else if (s == "--tls") {
      a.use_tls = true;
    } else if (s == "--insecure") {
      a.tls.insecure_skip_verify_testing_only = true;
      a.tls_flags = true;
    } else if (s.size() > 2 && s.compare(0, 2, "--") == 0) {
      std::string key = s, value;
      auto eq = s.find('=');
      if (eq != std::string::npos) {
        key = s.substr(0, eq);
        value = s.substr(eq + 1);
      } else if (std::find(with_value.begin(), with_value.end(), s) != with_value.end()) {
        if (i + 1 >= argc) throw UsageError(s + " needs a value");
        value = argv[++i];
      }
      if (std::find(with_value.begin(), with_value.end(), key) == with_value.end()) {
        throw UsageError("unknown option " + key);
      }
      if (key == "--url") {
        a.url = value;
      } else if (key == "--prefix") {
        a.prefix = value;
      } else if (take_tls_option(key, value, a.tls)) {
        a.tls_flags = true;
      } else {
        a.values[key] = value;
      }
    } else if (a.command.empty()) {
      a.command = s;
    } else if (a.command == "run" && a.positional.size() == 1) {
      for (; i < argc; ++i) a.exec.emplace_back(argv[i]);  // `run NAME CMD ...` without "--"
      break;
    } else {
      a.positional.push_back(s);
    }
  }
  return a;
}

// `run` waits, so it takes wake signals; the other commands only read or

fairlock::Options client_options(const Args& a, fairlock::Notify notify) {
  fairlock::Options o;
  o.url = a.url;
  if (a.use_tls && o.url.rfind("redis://", 0) == 0) o.url.insert(5, "s");
  const bool tls = o.url.rfind("rediss://", 0) == 0;
  if (tls) o.tls = a.tls;  // (environment defaults do not apply to plain URLs)
  if (!tls && a.use_tls) throw UsageError("--tls needs a redis:// URL (it is " + a.url + ")");
  if (!tls && a.tls_flags) throw UsageError("TLS options need a rediss:// URL or --tls");
  o.key_prefix = a.prefix;
  o.notify = notify;
  o.allow_evicting_server = a.allow_evicting;
  return o;
}

void need_positional(const Args& a, std::size_t n, const char* what) {
  if (a.positional.size() != n) throw UsageError(std::string("usage: fairlock ") + what);
}

}  // namespace fairlock::cli
