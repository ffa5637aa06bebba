#include "usage.h"

#include <sstream>

namespace fairlock::cli {

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

}  // namespace fairlock::cli
