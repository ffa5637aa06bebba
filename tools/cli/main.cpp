// fairlock: wrap a command in a fair distributed lock, and look at queues.
// See `fairlock --help`; exit statuses are listed in usage() and the README.
#include <fairlock/fairlock.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

// Exit statuses (documented in usage() and the README).
constexpr int kUsage = 64;        // bad command line
constexpr int kUnavailable = 69;  // Redis unreachable
constexpr int kSoftware = 70;     // any other error
constexpr int kWaitTimeout = 75;  // --wait ran out before the turn came
constexpr int kLost = 76;         // the grant was lost while the command ran
constexpr int kNotFound = 1;      // evict: no such token
constexpr int kConfig = 78;       // a TLS setup that cannot work, a server that may evict

const char* const kUsageText = R"(usage: fairlock [--url URL] [--prefix P] COMMAND ...

Commands:
  run [--permits N] [--lease D] [--wait D] [--kill-on-loss] NAME -- CMD [ARGS...]
        wait for NAME's turn (FIFO), run CMD holding it, release when CMD exits.
        CMD sees FAIRLOCK_NAME and FAIRLOCK_FENCE in its environment. The grant
        is kept alive while CMD runs. SIGINT/SIGTERM while waiting leave the
        queue; while CMD runs they are forwarded to it.
  status [--json] NAME      holders and waiters of NAME (positions, ages)
  list [PATTERN]            names with holders or waiters (glob PATTERN, SCAN)
  watch [--interval D] [--count N] NAME
                            refreshing view of NAME until interrupted
  evict NAME TOKEN          remove a wedged holder or waiter (next one is woken)

Options:
  --url URL       redis://[user:password@]host:port[/db], rediss://... (TLS)
                  or unix:///path
                  (default: $FAIRLOCK_URL, else redis://127.0.0.1:6379)
  --prefix P      key prefix (default: fairlock)
  --allow-evicting-server
                  go on where Redis's maxmemory-policy may evict the
                  lock's keys (refused otherwise: status 78)
  --help          this text;  --version  the version
TLS (as redis-cli --tls; used with rediss:// or --tls; each value also from
the environment variable named):
  --tls               use TLS (turns a redis:// URL into rediss://)
  --cacert FILE       CA certificates to trust          $FAIRLOCK_CACERT
  --cacertdir DIR     directory of hashed CA certs      $FAIRLOCK_CACERTDIR
                      (neither: the system's CA store)
  --cert FILE         client certificate (mutual TLS)   $FAIRLOCK_CERT
  --key FILE          its private key                   $FAIRLOCK_KEY
  --sni NAME          name sent and verified            $FAIRLOCK_SNI
                      (default: the URL's host)
  --tls-min-version V 1.2 (default) or 1.3
  --insecure          do not verify the server's certificate (tests only)
Durations D: a number with ms, s, m or h (a bare number means seconds).

Exit status:
  run: the command's status (128+N if it died of signal N); 75 if --wait ran
  out; 76 if the grant was lost while the command ran (reported on stderr;
  the command is killed only with --kill-on-loss, which also does not start
  it, or sends it SIGTERM as soon as it starts, if the grant is lost before);
  126/127 if the command cannot be run; 128+N if signal N interrupted the
  wait.
  all: 64 bad usage, 69 Redis unreachable, 70 other errors, 78 a TLS setup
  that cannot work (certificate not verified, refused, bad file) or a server
  that may evict the lock's keys; evict: 1 if the token was not found.
)";

// The help of one command: its lines of the usage text, then the options.
std::string command_help(const std::string& command) {
  std::istringstream in(kUsageText);
  std::string line, section, rest;
  bool inside = false, options = false;
  while (std::getline(in, line)) {
    if (line.rfind("Options:", 0) == 0) options = true;
    if (options) {
      rest += line + "\n";
      continue;
    }
    if (line.rfind("  " + command + " ", 0) == 0) {
      inside = true;
    } else if (inside && line.rfind("        ", 0) != 0 && line.rfind("                ", 0) != 0) {
      inside = false;
    }
    if (inside) section += line + "\n";
  }
  if (command.empty() || section.empty()) return kUsageText;
  return "usage: fairlock [--url URL] [--prefix P] COMMAND ...\n\n" + section + "\n" + rest;
}

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

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

// Printable rendering of a name or token (names may hold any byte but braces).
std::string printable(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return out;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c < 0x20 || c >= 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out + "\"";
}

std::string human(std::chrono::milliseconds d) {
  char buf[32];
  long long ms = d.count();
  if (ms < 0) return "expired";
  if (ms < 1000) {
    std::snprintf(buf, sizeof buf, "%lldms", ms);
  } else if (ms < 120000) {
    std::snprintf(buf, sizeof buf, "%.1fs", static_cast<double>(ms) / 1000.0);
  } else {
    std::snprintf(buf, sizeof buf, "%lldm%02llds", ms / 60000, (ms / 1000) % 60);
  }
  return buf;
}

struct Args {
  std::string url, prefix = "fairlock", command;
  fairlock::TlsOptions tls;
  bool use_tls = false, tls_flags = false;  // --tls; any other TLS flag given
  std::vector<std::string> positional, exec;
  std::map<std::string, std::string> values;
  bool json = false, kill_on_loss = false, help = false, allow_evicting = false;
};

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
// evict and need no subscriber.
fairlock::Options client_options(const Args& a, fairlock::Notify notify = fairlock::Notify::poll) {
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

// --------------------------------------------------------------- run

// Signals are blocked in every thread; this one takes them with sigwait.
std::atomic<int> g_signal{0};
std::atomic<bool> g_waiting{true};
std::mutex g_child_mu;  // g_child and g_unforwarded change together
pid_t g_child = 0;
int g_unforwarded = 0;  // a signal taken between the turn and the fork: forwarded once the child exists

// The command runs as `pid` (0: it ended); a signal taken while it was
// being started is forwarded to it now.
void set_child(pid_t pid) {
  std::lock_guard<std::mutex> lk(g_child_mu);
  g_child = pid;
  if (pid > 0 && g_unforwarded != 0) ::kill(pid, std::exchange(g_unforwarded, 0));
}

// Forwards `sig` to the running command; returns false if none runs.
bool forward_to_child(int sig) {
  std::lock_guard<std::mutex> lk(g_child_mu);
  if (g_child > 0) {
    ::kill(g_child, sig);
    return true;
  }
  if (!g_waiting.load()) g_unforwarded = sig;  // it is being started
  return false;
}

int cmd_run(const Args& a) {
  if (a.positional.size() != 1 || a.exec.empty())
    throw UsageError("usage: fairlock run [options] NAME -- CMD [ARGS...]");
  const std::string& name = a.positional[0];
  std::uint32_t permits = 1;
  if (a.values.count("--permits")) {
    permits = static_cast<std::uint32_t>(parse_count(a.values.at("--permits"), "--permits", 1, 1000000));
  }
  fairlock::LockOptions lo;
  if (a.values.count("--lease")) lo.lease = parse_duration(a.values.at("--lease"), "--lease");
  std::optional<std::chrono::milliseconds> wait;
  if (a.values.count("--wait")) wait = parse_duration(a.values.at("--wait"), "--wait");

  sigset_t set, old;
  sigemptyset(&set);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaddset(&set, s);
  pthread_sigmask(SIG_BLOCK, &set, &old);  // before any thread starts

  std::atomic<bool> lost{false};
  const bool kill_on_loss = a.kill_on_loss;
  lo.on_lost = [&lost, kill_on_loss] {
    lost = true;
    std::fprintf(stderr, "fairlock: the lock was lost while the command ran%s\n",
                 kill_on_loss ? "; terminating the command" : "");
    if (kill_on_loss) forward_to_child(SIGTERM);
  };
  fairlock::Client client(client_options(a, fairlock::Notify::publish));
  fairlock::FairSemaphore lock(client, name, permits, lo);

  std::thread signals([&] {
    for (;;) {
      int sig = 0;
      if (sigwait(&set, &sig) != 0) continue;
      g_signal = sig;
      if (!forward_to_child(sig) && g_waiting.load()) lock.cancel();  // waiting: leave the queue
    }
  });
  signals.detach();

  bool got = false;
  try {
    got = wait ? lock.try_lock_for(*wait) : (lock.lock(), true);
  } catch (const fairlock::Cancelled&) {
    return 128 + g_signal.load();
  }
  g_waiting = false;
  if (!got) {
    std::fprintf(stderr, "fairlock: %s: no turn within --wait\n", printable(name).c_str());
    return kWaitTimeout;
  }
  if (int sig = g_signal.load()) {  // interrupted just as the turn came
    lock.unlock();
    return 128 + sig;
  }
  if (lost && kill_on_loss) {  // lost before the command started: do not start it
    (void)lock.release();      // lost: nothing to release, but the claim is ended
    std::fprintf(stderr, "fairlock: %s: the lock was lost before the command started; not started\n",
                 printable(name).c_str());
    return kLost;
  }

  std::string fence = std::to_string(lock.fence());
  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    ::setenv("FAIRLOCK_NAME", name.c_str(), 1);
    ::setenv("FAIRLOCK_FENCE", fence.c_str(), 1);
    std::vector<char*> argv;
    for (const auto& s : a.exec) argv.push_back(const_cast<char*>(s.c_str()));
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    int err = errno;
    std::fprintf(stderr, "fairlock: cannot run %s: %s\n", argv[0], std::strerror(err));
    ::_exit(err == ENOENT ? 127 : 126);
  }
  set_child(pid);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  set_child(0);
  int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  const fairlock::Released released = lock.release();
  if (released == fairlock::Released::failed) {
    std::fprintf(stderr, "fairlock: %s: could not release (redis unreachable); it expires with its lease\n",
                 printable(name).c_str());
    return kUnavailable;
  }
  if (released == fairlock::Released::lost || lost) {
    std::fprintf(stderr, "fairlock: %s: the lock was lost while the command ran (command status %d)\n",
                 printable(name).c_str(), rc);
    return kLost;
  }
  return rc;
}

// --------------------------------------------------------------- status / watch

void print_table(const fairlock::QueueState& st, std::ostream& out) {
  out << "name " << printable(st.name) << "  permits " << st.permits << "  holders " << st.holder_count << "  waiters "
      << st.waiter_count << "  last fence " << st.last_fence << "\n";
  char line[256];
  if (!st.holders.empty()) {
    std::snprintf(line, sizeof line, "  %-8s %-50s %18s %9s %11s\n", "HOLDER", "TOKEN", "FENCE", "HELD", "LEASE LEFT");
    out << line;
    for (const auto& h : st.holders) {
      std::snprintf(line, sizeof line, "  %-8s %-50s %18llu %9s %11s\n", "", printable(h.token).c_str(),
                    static_cast<unsigned long long>(h.fence), human(h.held).c_str(), human(h.lease_left).c_str());
      out << line;
    }
  }
  if (!st.waiters.empty()) {
    std::snprintf(line, sizeof line, "  %-8s %-50s %18s %9s %11s\n", "WAITER", "TOKEN", "TICKET", "WAITED",
                  "LIVE LEFT");
    out << line;
    for (const auto& w : st.waiters) {
      std::snprintf(line, sizeof line, "  #%-7zu %-50s %18llu %9s %11s\n", w.position, printable(w.token).c_str(),
                    static_cast<unsigned long long>(w.ticket), human(w.waited).c_str(), human(w.liveness_left).c_str());
      out << line;
    }
    if (st.waiter_count > st.waiters.size()) out << "  ... and " << st.waiter_count - st.waiters.size() << " more\n";
  }
  if (st.holders.empty() && st.waiters.empty()) out << "  (idle)\n";
}

void print_json(const fairlock::QueueState& st, std::ostream& out) {
  out << "{\"name\":" << json_string(st.name) << ",\"permits\":" << st.permits << ",\"last_fence\":" << st.last_fence
      << ",\"holder_count\":" << st.holder_count << ",\"waiter_count\":" << st.waiter_count
      << ",\"server_time_ms\":" << st.server_time_ms << ",\"holders\":[";
  for (std::size_t i = 0; i < st.holders.size(); ++i) {
    const auto& h = st.holders[i];
    out << (i ? "," : "") << "{\"token\":" << json_string(h.token) << ",\"fence\":" << h.fence
        << ",\"held_ms\":" << h.held.count() << ",\"lease_left_ms\":" << h.lease_left.count() << "}";
  }
  out << "],\"waiters\":[";
  for (std::size_t i = 0; i < st.waiters.size(); ++i) {
    const auto& w = st.waiters[i];
    out << (i ? "," : "") << "{\"token\":" << json_string(w.token) << ",\"position\":" << w.position
        << ",\"ticket\":" << w.ticket << ",\"waited_ms\":" << w.waited.count()
        << ",\"liveness_left_ms\":" << w.liveness_left.count() << "}";
  }
  out << "]}\n";
}

int cmd_status(const Args& a) {
  need_positional(a, 1, "status [--json] NAME");
  fairlock::Client client(client_options(a));
  auto st = client.inspect(a.positional[0]);
  if (a.json) {
    print_json(st, std::cout);
  } else {
    print_table(st, std::cout);
  }
  return 0;
}

int cmd_watch(const Args& a) {
  need_positional(a, 1, "watch [--interval D] [--count N] NAME");
  auto interval = a.values.count("--interval") ? parse_duration(a.values.at("--interval"), "--interval")
                                               : std::chrono::milliseconds(1000);
  long long count = a.values.count("--count") ? parse_count(a.values.at("--count"), "--count", 1, 1000000000) : -1;
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  fairlock::Client client(client_options(a));
  const bool tty = ::isatty(STDOUT_FILENO);
  for (long long n = 0; count < 0 || n < count; ++n) {
    auto st = client.inspect(a.positional[0], 50);
    std::ostringstream frame;
    if (tty) frame << "\033[H\033[2J";
    print_table(st, frame);
    if (!tty) frame << "\n";
    std::cout << frame.str() << std::flush;
    if (count >= 0 && n + 1 >= count) break;
    timespec ts{static_cast<time_t>(interval.count() / 1000), static_cast<long>(interval.count() % 1000) * 1000000};
    if (sigtimedwait(&set, nullptr, &ts) > 0) break;  // interrupted: stop cleanly
  }
  return 0;
}

int cmd_list(const Args& a) {
  if (a.positional.size() > 1) throw UsageError("usage: fairlock list [PATTERN]");
  fairlock::Client client(client_options(a));
  auto names = client.list(a.positional.empty() ? "*" : a.positional[0]);
  std::printf("%-40s %8s %8s\n", "NAME", "HOLDERS", "WAITERS");
  for (const auto& n : names) std::printf("%-40s %8zu %8zu\n", printable(n.name).c_str(), n.holders, n.waiters);
  return 0;
}

int cmd_evict(const Args& a) {
  need_positional(a, 2, "evict NAME TOKEN");
  fairlock::Client client(client_options(a));
  switch (client.evict(a.positional[0], a.positional[1])) {
    case fairlock::Evicted::holder: std::printf("evicted holder %s\n", a.positional[1].c_str()); return 0;
    case fairlock::Evicted::waiter: std::printf("evicted waiter %s\n", a.positional[1].c_str()); return 0;
    case fairlock::Evicted::none: break;
  }
  std::fprintf(stderr, "fairlock: %s: no holder or waiter %s\n", printable(a.positional[0]).c_str(),
               a.positional[1].c_str());
  return kNotFound;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    for (int i = 1; i < argc && std::string(argv[i]) != "--"; ++i) {
      if (std::string(argv[i]) == "--version") {
        std::printf("fairlock %s\n", FAIRLOCK_VERSION_STRING);
        return 0;
      }
    }
    Args a = parse(argc, argv);
    if (a.help) {
      std::fputs(command_help(a.command).c_str(), stdout);
      return 0;
    }
    if (a.command == "run") return cmd_run(a);
    if (a.command == "status") return cmd_status(a);
    if (a.command == "list") return cmd_list(a);
    if (a.command == "watch") return cmd_watch(a);
    if (a.command == "evict") return cmd_evict(a);
    if (a.command.empty()) throw UsageError("");
    throw UsageError("unknown command '" + a.command + "'");
  } catch (const UsageError& e) {
    if (*e.what()) {
      std::fprintf(stderr, "fairlock: %s (see fairlock --help)\n", e.what());
      return kUsage;
    }
    std::fputs(kUsageText, stdout);
    return argc > 1 ? 0 : kUsage;
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "fairlock: %s\n", e.what());
    return kUsage;
  } catch (const fairlock::TlsError& e) {
    std::fprintf(stderr, "fairlock: %s\n", e.what());
    return fairlock::is_setup_error(e) ? kConfig : kUnavailable;  // cured by no retry, or perhaps by one
  } catch (const fairlock::EvictionPolicyError& e) {
    std::fprintf(stderr, "fairlock: %s (for this command: --allow-evicting-server)\n", e.what());
    return kConfig;
  } catch (const fairlock::ConnectionError& e) {
    std::fprintf(stderr, "fairlock: %s\n", e.what());
    return kUnavailable;
  } catch (const fairlock::TimeoutError& e) {
    std::fprintf(stderr, "fairlock: %s\n", e.what());
    return kUnavailable;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fairlock: %s\n", e.what());
    return kSoftware;
  }
}
