// `fairlock run`: wait for the turn, run the command holding it, release.
#include <fairlock/fairlock.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "commands.h"
#include "exit_codes.h"
#include "text.h"

namespace fairlock::cli {
namespace {

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

}  // namespace

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

}  // namespace fairlock::cli
