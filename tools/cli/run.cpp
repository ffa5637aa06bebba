// `fairlock run`: wait for the turn, run the command holding it (or hold
// without one), release.
#include <fairlock/fairlock.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include "commands.h"
#include "exit_codes.h"
#include "hold.h"
#include "launch.h"
#include "progress.h"
#include "signals.h"
#include "text.h"

namespace fairlock::cli {
namespace {

// How long after --wait's deadline the command gives up on a library call
// that has not returned (a server that stopped answering), and how long it
// gives the Client's shutdown once it has decided to exit.
constexpr std::chrono::milliseconds kWatchdogMargin{100};
constexpr std::chrono::milliseconds kShutdownMargin{50};
// -n's one round trip: a slow machine must not turn a free lock into "busy".
constexpr std::chrono::milliseconds kTryMargin{1000};

struct RunSettings {
  std::string name;
  std::uint32_t permits = 1;
  fairlock::LockOptions lock;
  std::optional<std::chrono::milliseconds> wait;  // none: forever; 0: a try (-n)
  int conflict = kConflict;
  bool kill_on_loss = false, verbose = false;
};

RunSettings settings(const Args& a) {
  if (a.positional.size() != 1) throw UsageError("usage: fairlock run [options] NAME [--] [CMD [ARGS...]]");
  RunSettings s;
  s.name = a.positional[0];
  if (a.has("--permits"))
    s.permits = static_cast<std::uint32_t>(parse_count(a.values.at("--permits"), "--permits", 1, 1000000));
  if (a.has("--lease")) s.lock.lease = parse_duration(a.values.at("--lease"), "--lease");
  if (s.lock.lease < fairlock::limits::kMinLease) {
    throw UsageError("--lease: at least " + std::to_string(fairlock::limits::kMinLease.count()) + "ms");
  }
  const int given = a.has("--wait") + a.has("--timeout") + a.has("--nonblock");
  if (given > 1) throw UsageError("--wait, -w/--timeout and -n/--nonblock: one at most");
  if (a.has("--wait")) s.wait = parse_duration(a.values.at("--wait"), "--wait", true);
  if (a.has("--timeout")) s.wait = parse_duration(a.values.at("--timeout"), "-w/--timeout", true);
  if (a.has("--nonblock")) s.wait = std::chrono::milliseconds(0);
  if (a.has("--conflict-exit-code")) {
    s.conflict = static_cast<int>(parse_count(a.values.at("--conflict-exit-code"), "-E/--conflict-exit-code", 1, 255));
  }
  s.kill_on_loss = a.has("--kill-on-loss");
  s.verbose = a.has("--verbose");
  return s;
}

// Exits with the conflict status if the library has not answered by the
// time `at`; disarm() before acting on its answer.
class Watchdog {
 public:
  Watchdog(std::chrono::steady_clock::time_point at, const std::string& name, int status)
      : thread_([this, at, name, status] {
          std::unique_lock<std::mutex> lk(mu_);
          if (cv_.wait_until(lk, at, [this] { return done_; })) return;
          std::fprintf(stderr,
                       "fairlock: %s: no turn within --wait (the server does not answer; the queue entry lapses "
                       "with its liveness)\n",
                       printable(name).c_str());
          std::_Exit(status);
        }) {}
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;
  ~Watchdog() { disarm(); }
  void disarm() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      done_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

// Returns `status` to exit with; if the Client's shutdown (a server that
// stopped answering) has not let the process exit by `at` (and at least
// kShutdownMargin from now), exits then anyway: --wait bounds the exit.
int exit_soon(int status, std::chrono::steady_clock::time_point at = {}) {
  at = std::max(at, std::chrono::steady_clock::now() + kShutdownMargin);
  std::thread([status, at] {
    std::this_thread::sleep_until(at);
    std::_Exit(status);
  }).detach();
  return status;
}

// Waits for the turn; true if held. Throws Cancelled when a signal ended the wait.
bool acquire(fairlock::FairSemaphore& lock, const RunSettings& s) {
  if (!s.wait) {
    lock.lock();
    return true;
  }
  return s.wait->count() == 0 ? lock.try_lock() : lock.try_lock_for(*s.wait);
}

// on_lost: notes the loss, says so, and ends the command's group (--kill-on-loss) or the hold.
std::function<void()> report_loss(std::atomic<bool>& lost, bool kill_on_loss, const std::string& name) {
  return [&lost, kill_on_loss, name] {
    lost = true;
    std::fprintf(stderr, "fairlock: %s: the lock was lost%s\n", printable(name).c_str(),
                 kill_on_loss ? "; terminating the command's process group" : "");
    if (kill_on_loss) signal_command(SIGTERM);
    end_hold();
  };
}

// Runs the command holding the lock; its status.
int run_command(const Args& a, const RunSettings& s, std::uint64_t fence, const sigset_t& mask) {
  Command c{a.exec, {"FAIRLOCK_NAME=" + s.name, "FAIRLOCK_FENCE=" + std::to_string(fence)}, mask};
  const bool terminal = owns_terminal();
  set_phase(Phase::starting);
  const pid_t pid = launch(c, terminal);
  set_running(pid);
  const int rc = wait_command(pid, terminal);
  set_phase(Phase::done);
  return rc;
}

// Releases after the command (or the hold) ended with `rc`; the exit status.
int finish(fairlock::FairSemaphore& lock, const RunSettings& s, int rc, bool lost, bool command) {
  const fairlock::Released released = lock.release();
  if (released == fairlock::Released::lost || lost) {
    if (command) {
      std::fprintf(stderr, "fairlock: %s: the lock was lost while the command ran (command status %d)\n",
                   printable(s.name).c_str(), rc);
    } else {
      std::fprintf(stderr, "fairlock: %s: the lock was lost while held\n", printable(s.name).c_str());
    }
    return kLost;
  }
  if (released == fairlock::Released::failed) {
    std::fprintf(stderr, "fairlock: %s: could not release (Redis unreachable); it expires with its lease, within %s\n",
                 printable(s.name).c_str(), human(s.lock.lease).c_str());
  } else if (s.verbose) {
    std::fprintf(stderr, "fairlock: %s: released\n", printable(s.name).c_str());
  }
  return rc;
}

// Holding: holds without a command, or runs it; releases; the exit status.
int held(const Args& a, const RunSettings& s, fairlock::FairSemaphore& lock, const std::atomic<bool>& lost,
         const sigset_t& mask) {
  if (s.verbose)
    std::fprintf(stderr, "fairlock: %s: held, fence %llu\n", printable(s.name).c_str(),
                 static_cast<unsigned long long>(lock.fence()));
  if (a.exec.empty()) return finish(lock, s, hold(lock.fence()), lost, false);
  if (lost && s.kill_on_loss) {  // lost before the command started: do not start it
    (void)lock.release();
    std::fprintf(stderr, "fairlock: %s: the lock was lost before the command started; not started\n",
                 printable(s.name).c_str());
    return kLost;
  }
  return finish(lock, s, run_command(a, s, lock.fence(), mask), lost, true);
}

}  // namespace

int cmd_run(const Args& a) {
  RunSettings s = settings(a);
  sigset_t old;
  block_signals(&old);  // before any thread starts
  const auto wait = s.wait.value_or(std::chrono::milliseconds(0));
  const auto exit_by = std::chrono::steady_clock::now() + wait + (wait.count() ? kWatchdogMargin : kTryMargin);
  std::optional<Watchdog> dog;  // armed before the first connection: --wait bounds that too
  if (s.wait) dog.emplace(exit_by, s.name, s.conflict);
  std::atomic<bool> lost{false};
  s.lock.on_lost = report_loss(lost, s.kill_on_loss, s.name);
  fairlock::Options options = client_options(a, fairlock::Notify::publish);
  if (a.has("--sync-replicas")) {
    options.sync_replicas = static_cast<int>(parse_count(a.values.at("--sync-replicas"), "--sync-replicas", 0, 16));
  }
  fairlock::Client client(options);
  std::optional<Progress> progress;
  if (s.verbose || ::isatty(STDERR_FILENO)) {
    progress.emplace(client, s.name);
    s.lock.on_position = [&progress](std::size_t p) { progress->moved(p); };
  }
  fairlock::FairSemaphore lock(client, s.name, s.permits, s.lock);
  start_signal_thread([&lock](int) {
    lock.cancel();
    end_hold();
  });
  bool got = false;
  try {
    got = acquire(lock, s);  // (an operator's evict ends it with EvictedError: main's status 79)
  } catch (const fairlock::Cancelled&) {
    return exit_soon(kSignalBase + stop_signal());
  }
  if (dog) dog->disarm();
  if (progress) progress->stop();
  if (!got) {
    std::fprintf(stderr, "fairlock: %s: no turn %s\n", printable(s.name).c_str(),
                 s.wait->count() ? "within --wait" : "(-n: busy, or others wait)");
    return exit_soon(s.conflict, exit_by);
  }
  if (const int sig = enter_unless_stopped(a.exec.empty() ? Phase::holding : Phase::starting)) {
    lock.unlock();  // interrupted just as the turn came
    return kSignalBase + sig;
  }
  return held(a, s, lock, lost, old);
}

}  // namespace fairlock::cli
