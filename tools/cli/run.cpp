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
#include <string>
#include <thread>
#include <utility>

#include "commands.h"
#include "exit_codes.h"
#include "hold.h"
#include "launch.h"
#include "progress.h"
#include "signals.h"
#include "text.h"

namespace fairlock::cli {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

// How long after --wait's deadline the command gives up on a library call
// that has not returned (a server that stopped answering, or a connection
// that never completed): the library's own leave at the deadline, or its
// release of a grant the replicas did not acknowledge, ends by the deadline
// plus 100 ms (its grace), WAIT or not; 50 ms more let it answer first. And
// how long it gives the Client's shutdown once it has decided to exit.
constexpr milliseconds kWatchdogMargin{150};
constexpr milliseconds kShutdownMargin{50};
// -n's one round trip: a slow machine must not turn a free lock into "busy".
constexpr milliseconds kTryMargin{1000};

struct RunSettings {
  std::string name;
  std::uint32_t permits = 1;
  fairlock::LockOptions lock;
  std::optional<milliseconds> wait;  // none: forever; 0: a try (-n)
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
  if (a.has("--nonblock")) s.wait = milliseconds(0);
  if (a.has("--conflict-exit-code")) {
    s.conflict = static_cast<int>(parse_count(a.values.at("--conflict-exit-code"), "-E/--conflict-exit-code", 1, 255));
  }
  s.kill_on_loss = a.has("--kill-on-loss");
  s.verbose = a.has("--verbose");
  return s;
}

// How long from the start the command waits for the library's answer before
// it gives up (the server stopped answering): --wait and kWatchdogMargin, or
// -n's kTryMargin. Under --wait a WAIT (--sync-replicas) is timed to be
// answered by the deadline, so the margin is the same. -n has no deadline:
// its WAIT takes up to sync_timeout and limits::kSyncSlack, and its grant,
// not acknowledged, is then released (kWatchdogMargin, as --wait's leave).
milliseconds give_up_after(milliseconds wait, const fairlock::Options& o) {
  if (wait.count() > 0) return wait + kWatchdogMargin;
  milliseconds after = kTryMargin;
  if (o.sync_replicas > 0) after += o.sync_timeout + fairlock::limits::kSyncSlack + kWatchdogMargin;
  return after;
}

// What the watchdog says when the library has not answered in time.
std::string no_answer(const RunSettings& s) {
  return "fairlock: " + printable(s.name) +
         (s.wait->count() ? ": no turn within --wait (the server does not answer; the queue entry lapses with its "
                            "liveness)"
                          : ": no turn (-n: the server does not answer; a grant it made lapses with its lease)");
}

// Exits with the conflict status, saying `why`, if the library has not
// answered by the time `at`; disarm() before acting on its answer.
class Watchdog {
 public:
  Watchdog(steady_clock::time_point at, std::string why, int status)
      : thread_([this, at, why = std::move(why), status] {
          std::unique_lock<std::mutex> lk(mu_);
          if (cv_.wait_until(lk, at, [this] { return done_; })) return;
          std::fprintf(stderr, "%s\n", why.c_str());
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
int exit_soon(int status, steady_clock::time_point at = {}) {
  at = std::max(at, steady_clock::now() + kShutdownMargin);
  std::thread([status, at] {
    std::this_thread::sleep_until(at);
    std::_Exit(status);
  }).detach();
  return status;
}

// Waits for the turn; true if held. Throws Cancelled when a signal ended the
// wait. --wait counts from `start`: connecting took part of it (and the
// watchdog counts from there), but the turn is asked for once at least.
bool acquire(fairlock::FairSemaphore& lock, const RunSettings& s, steady_clock::time_point start) {
  if (!s.wait) {
    lock.lock();
    return true;
  }
  if (s.wait->count() == 0) return lock.try_lock();
  const auto left = *s.wait - (steady_clock::now() - start);
  return lock.try_lock_for(std::max<steady_clock::duration>(left, milliseconds(1)));
}

fairlock::Options run_options(const Args& a) {
  fairlock::Options options = client_options(a, fairlock::Notify::publish);
  if (a.has("--sync-replicas")) {
    options.sync_replicas = static_cast<int>(parse_count(a.values.at("--sync-replicas"), "--sync-replicas", 0, 16));
  }
  return options;
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
  const fairlock::Options options = run_options(a);
  sigset_t old;
  block_signals(&old);  // before any thread starts
  const auto start = steady_clock::now();
  const auto exit_by = start + give_up_after(s.wait.value_or(milliseconds(0)), options);
  std::optional<Watchdog> dog;  // armed before the first connection: --wait bounds that too
  if (s.wait) dog.emplace(exit_by, no_answer(s), s.conflict);
  std::atomic<bool> lost{false};
  s.lock.on_lost = report_loss(lost, s.kill_on_loss, s.name);
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
    got = acquire(lock, s, start);  // (an operator's evict ends it with EvictedError: main's status 79)
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
