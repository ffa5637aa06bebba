#include "args.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <initializer_list>
#include <iterator>
#include <utility>

#include "options.h"

namespace fairlock::cli {

std::chrono::milliseconds parse_duration(const std::string& s, const char* what, bool allow_zero) {
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
  if (allow_zero && ms == 0) return std::chrono::milliseconds(0);
  if (!(ms > 0) || ms > 2147483647.0) {
    throw UsageError(std::string(what) + (allow_zero ? ": must be 0 or more" : ": must be positive") +
                     " and below 24 days");
  }
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

// The sentinels' own credentials (Options::sentinel): from the environment
// only, as a password never belongs on a command line.
void sentinel_credentials_from_environment(fairlock::SentinelOptions& s) {
  if (const char* v = std::getenv("FAIRLOCK_SENTINEL_USER")) s.user = v;
  if (const char* v = std::getenv("FAIRLOCK_SENTINEL_PASSWORD")) s.password = v;
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

namespace {

UsageError misuse(const std::string& command, const std::string& what) {
  const std::string who = command.empty() ? "fairlock" : "fairlock " + command;
  return UsageError(who + ": " + what + " (see " + who + " --help)");
}

// Applies one option (known to apply to a.command) with its value.
void apply(Args& a, const OptionSpec& spec, const std::string& value) {
  const std::string key = spec.name;
  if (key == "--url") {
    a.url = value;
  } else if (key == "--prefix") {
    a.prefix = value;
  } else if (key == "--help") {
    a.help = true;
  } else if (key == "--version") {
    a.version = true;
  } else if (key == "--allow-evicting-server") {
    a.allow_evicting = true;
  } else if (key == "--tls") {
    a.use_tls = true;
  } else if (key == "--insecure") {
    a.tls.insecure_skip_verify_testing_only = true;
    a.tls_flags = true;
  } else if (take_tls_option(key, value, a.tls)) {
    a.tls_flags = true;
  } else {
    a.values[key] = value;
  }
}

// Checks that `spec` may be given here; `word` is how it was spelled.
void check_scope(const Args& a, const OptionSpec& spec, const std::string& word) {
  if (applies(spec, a.command)) return;
  if (std::string(spec.name) == "--version") throw misuse(a.command, "--version goes before the subcommand");
  if (a.command.empty()) throw misuse("", word + " is an option of a subcommand: put it after the subcommand's name");
  throw misuse(a.command, a.command + " takes no option " + word);
}

// Takes argv[i] (an option or a cluster of short ones) and its value; moves
// i past what it used.
void take_option(Args& a, int argc, char** argv, int& i) {
  const std::string s = argv[i];
  if (s.compare(0, 2, "--") == 0) {
    const auto eq = s.find('=');
    const std::string word = s.substr(0, eq);
    const OptionSpec* spec = find_option(word);
    if (!spec) throw misuse(a.command, "unknown option " + word);
    check_scope(a, *spec, word);
    std::string value;
    if (eq != std::string::npos) {
      if (!spec->takes_value) throw misuse(a.command, word + " takes no value");
      value = s.substr(eq + 1);
    } else if (spec->takes_value) {
      if (i + 1 >= argc) throw misuse(a.command, word + " needs a value");
      value = argv[++i];
    }
    apply(a, *spec, value);
    return;
  }
  for (std::size_t j = 1; j < s.size(); ++j) {  // -nv, -w5, -w 5
    const std::string word = std::string("-") + s[j];
    const OptionSpec* spec = find_option(word);
    if (!spec) throw misuse(a.command, "unknown option " + word);
    check_scope(a, *spec, word + " (" + spec->name + ")");
    if (!spec->takes_value) {
      apply(a, *spec, "");
      continue;
    }
    std::string value = s.substr(j + 1);
    if (value.empty()) {
      if (i + 1 >= argc) throw misuse(a.command, word + " needs a value");
      value = argv[++i];
    }
    apply(a, *spec, value);
    return;
  }
}

}  // namespace

// fairlock [global options] COMMAND [options] ARGS; for run, everything after
// NAME (and one "--" right after it) is the command.
Args parse(int argc, char** argv) {
  Args a;
  const char* env = std::getenv("FAIRLOCK_URL");
  a.url = env && *env ? env : "redis://127.0.0.1:6379";
  tls_from_environment(a.tls);
  bool options_done = false;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    if (!options_done && s == "--") {
      options_done = true;
    } else if (!options_done && s.size() > 1 && s[0] == '-') {
      take_option(a, argc, argv, i);
    } else if (a.command.empty()) {
      a.command = s;
    } else {
      a.positional.push_back(s);
      if (a.command != "run") continue;
      int rest = i + 1;
      if (rest < argc && std::string(argv[rest]) == "--") ++rest;
      for (; rest < argc; ++rest) a.exec.emplace_back(argv[rest]);
      break;
    }
  }
  return a;
}

namespace {

// What this client registers (shown by status as who holds or waits): the
// subcommand, the name, and the command it runs.
std::string description_of(const Args& a) {
  std::string out = "fairlock " + a.command;
  for (const auto& p : a.positional) out += " " + p;
  if (!a.exec.empty()) out += " --";
  for (const auto& word : a.exec) out += " " + word;
  return out;
}

// Whether `url` starts with "<scheme>://" for one of `schemes`.
bool has_scheme(const std::string& url, std::initializer_list<const char*> schemes) {
  return std::any_of(schemes.begin(), schemes.end(),
                     [&](const char* scheme) { return url.rfind(std::string(scheme) + "://", 0) == 0; });
}

}  // namespace

fairlock::Options client_options(const Args& a, fairlock::Notify notify) {
  fairlock::Options o;
  o.url = a.url;
  if (a.use_tls && has_scheme(o.url, {"redis", "redis-sentinel", "redis-cluster"})) o.url.insert(5, "s");
  const bool tls = has_scheme(o.url, {"rediss", "rediss-sentinel", "rediss-cluster"});
  if (tls) o.tls = a.tls;  // (environment defaults do not apply to plain URLs)
  if (!tls && a.use_tls) {
    throw UsageError("--tls needs a redis://, redis-sentinel:// or redis-cluster:// URL (it is " + a.url + ")");
  }
  if (!tls && a.tls_flags) {
    throw UsageError("TLS options need a rediss://, rediss-sentinel:// or rediss-cluster:// URL, or --tls");
  }
  const bool sentinel = has_scheme(o.url, {"redis-sentinel", "rediss-sentinel"});
  if (sentinel) sentinel_credentials_from_environment(o.sentinel);  // (like TLS: not for other URLs)
  o.key_prefix = a.prefix;
  o.notify = notify;
  o.allow_evicting_server = a.allow_evicting;
  o.description = description_of(a);
  return o;
}

void need_positional(const Args& a, std::size_t n, const char* what) {
  if (a.positional.size() != n) throw UsageError(std::string("usage: fairlock ") + what);
}

}  // namespace fairlock::cli
