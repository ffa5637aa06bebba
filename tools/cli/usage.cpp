#include "usage.h"

#include <utility>

namespace fairlock::cli {
namespace {

const char* const kRunHelp = R"(usage: fairlock [global options] run [options] NAME [--] [CMD [ARGS...]]
  Waits for NAME's turn (FIFO), runs CMD holding it, releases when CMD has
  exited. Everything after NAME (and one "--" right after it) is CMD's, its
  options included. CMD sees FAIRLOCK_NAME and FAIRLOCK_FENCE; the hold is
  renewed while it runs.
  Without CMD: prints the fence (one line) once held, then holds until
  SIGINT/SIGTERM/SIGHUP or until stdin reaches EOF (stdin a pipe, a socket
  or the terminal), releases and exits 0 (76 if the lock was lost).

Options (defaults: permits 1, lease 10s, wait forever, liveness 5s):
  -p, --permits N       holders at once (a counting semaphore; default 1;
                        every user of NAME must give the same N)
  -l, --lease D         how long the hold outlives fairlock's last renewal
                        (default 10s, at least 100ms); renewed every D/3
  --wait D              give up after D (75); e.g. 30s, 1.5m
  -w, --timeout SECS    the same in seconds as flock(1): -w 2.5; -w 0 = -n
  -n, --nonblock        only if free now and nobody waits; never queues (75)
  -E, --conflict-exit-code N
                        status when -n, -w or --wait gets no turn (1..255;
                        default 75, flock's is 1)
  -k, --kill-on-loss    if the hold is lost, SIGTERM CMD's process group (and
                        do not start CMD if lost before it started)
  -v, --verbose         progress on stderr: place in line (#0 is next), held,
                        released (always when stderr is a terminal)
  --sync-replicas N     start CMD only once N replicas have the grant (WAIT);
                        renewals too; not acknowledged by --wait (-n: in
                        one WAIT): 69, released
A waiter that stops renewing leaves the queue after its liveness (5s).

Signals: CMD runs in a process group of its own, made the terminal's
  foreground when fairlock has the terminal (Ctrl-C, Ctrl-\ reach CMD only,
  and CMD can read the terminal). SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1,
  SIGUSR2 sent to fairlock are forwarded once to CMD's group (the same signal
  from the same sender within 50ms counts once: timeout(1) sends two).
  While waiting, SIGINT/SIGTERM/SIGHUP/SIGQUIT leave the queue (128+N).
  The lock is released only after CMD has exited. If fairlock dies without
  forwarding (SIGKILL, a crash), CMD is SIGKILLed at once (not a setuid
  CMD: the kernel clears that), CMD's own children are not. The hold ends
  when CMD exits: processes CMD leaves running run on without it. Signals
  ignored when fairlock started stay ignored; SIGPIPE is ignored.

Exit status: CMD's own (128+N if signal N ended it), also when the release
  fails afterwards (a warning on stderr); 75 no turn (--wait, -w, -n; -E
  chooses); 76 the hold was lost while CMD ran; 79 evicted by an operator
  while waiting; 126/127 CMD cannot be run / not found; 128+N signal N ended
  the wait; 64 usage, 69 Redis unreachable, 70 other, 77 wrong user/password
  or missing ACL right, 78 setup (TLS, an evicting server).
)";

const char* const kStatusHelp = R"(usage: fairlock [global options] status [--json] NAME
  Holders and waiters of NAME: tokens, fences, ages, lease and liveness left.
  Waiters are listed in queue order, #0 the next in line (as run -v counts).
  --json                one JSON object (waiters' "position": 0 = next)
Exit status: 0; 64 usage, 69 Redis unreachable, 70 other, 77 access, 78 setup.
)";

const char* const kListHelp = R"(usage: fairlock [global options] list [--json] [PATTERN]
  Names with holders or waiters (SCAN), PATTERN (default *) a glob; names
  aligned to the longest, never cut.
  --json                one JSON array of {"name", "holders", "waiters"}
Exit status: 0; 64 usage, 69 Redis unreachable, 70 other, 77 access, 78 setup.
)";

const char* const kWatchHelp = R"(usage: fairlock [global options] watch [--interval D] [--count N] NAME
  status NAME again and again (the screen redrawn on a terminal).
  --interval D          between views (default: interval 1s)
  --count N             views to show (default count: until interrupted)
Exit status: 0; 64 usage, 69 Redis unreachable, 70 other, 77 access, 78 setup.
)";

const char* const kEvictHelp = R"(usage: fairlock [global options] evict NAME TOKEN
  Removes a wedged holder or waiter (TOKEN as status shows it); the next in
  line is woken.
Exit status: 0 evicted; status 1 no such holder or waiter (or not a token);
  64 usage, 69 Redis unreachable, 70 other, 77 access, 78 setup.
)";

const char* const kGlobalHelp = R"(
Global options (before or after the subcommand's name, before NAME):
  -u, --url URL   redis://[user:password@]host:port[/db], rediss://... (TLS),
                  unix:///path, or through Sentinel
                  redis-sentinel://host1:26379[,host2:26379...][/db]#master
                  (rediss-sentinel://... for TLS; the URL's user:password
                  are the data nodes'; the sentinels' own, if they need
                  any: $FAIRLOCK_SENTINEL_USER, $FAIRLOCK_SENTINEL_PASSWORD),
                  or a Redis Cluster
                  redis-cluster://host1:6379[,host2:6379...] (database 0
                  only; the nodes named are a way in, not a list of all;
                  rediss-cluster://... for TLS to every node)
                  (default: $FAIRLOCK_URL, else redis://127.0.0.1:6379)
  --prefix P      key prefix (default: fairlock)
  --allow-evicting-server
                  go on where Redis's maxmemory-policy may evict the
                  lock's keys (refused otherwise: status 78)
  -h, --help      help;  --version (before the subcommand) the version
TLS (as redis-cli --tls; used with rediss:// or --tls; each value also from
the environment variable named):
  --tls               use TLS (turns redis:// into rediss://, the same for
                      redis-sentinel:// and redis-cluster://)
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
)";

}  // namespace

const char* const kUsageText = R"(usage: fairlock [global options] COMMAND [options] ...

Commands (fairlock COMMAND --help for each):
  run [options] NAME [--] [CMD [ARGS...]]
                   wait for NAME's turn, run CMD holding it (without CMD:
                   hold until stdin closes or a signal), release
  status [--json] NAME
                   holders and waiters of NAME (#0 is the next in line)
  list [--json] [PATTERN]
                   names with holders or waiters
  watch [--interval D] [--count N] NAME
                   status NAME, refreshed until interrupted
  evict NAME TOKEN remove a wedged holder or waiter

Exit status: run: the command's own; 75 no turn (--wait, -w, -n); 76 the
  hold was lost; 79 evicted while waiting; 126/127 cannot run; 128+N signal N.
  All: 64 usage, 69 Redis unreachable, 70 other, 77 wrong user/password or
  missing ACL right, 78 setup (TLS, an evicting server); evict: 1 not found.
)";

std::string command_help(const std::string& command) {
  const std::pair<const char*, const char*> helps[] = {
      {"run", kRunHelp}, {"status", kStatusHelp}, {"list", kListHelp}, {"watch", kWatchHelp}, {"evict", kEvictHelp}};
  for (const auto& [name, text] : helps) {
    if (command == name) return std::string(text) + kGlobalHelp;
  }
  return std::string(kUsageText) + kGlobalHelp;
}

}  // namespace fairlock::cli
