#include "signals.h"

#include <chrono>
#include <mutex>
#include <thread>
#include <utility>

namespace fairlock::cli {
namespace {

constexpr int kTaken[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
// timeout(1) and the like signal their child, then their group (which holds
// fairlock, not the command): the same signal from the same sender this soon
// after is one signal, forwarded once.
constexpr auto kSameSignal = std::chrono::milliseconds(50);

struct Router {
  std::mutex mu;
  Phase phase = Phase::waiting;
  pid_t pgid = 0;
  int kept = 0;  // taken while starting: sent once the command runs
  int stopped_by = 0;
  int last_sig = 0;
  pid_t last_sender = 0;
  std::chrono::steady_clock::time_point last_at;
  std::function<void(int)> stop;
};

Router& router() {
  static Router r;
  return r;
}

// The signals of kTaken not ignored when fairlock started: a shell starts a
// background job (a script's section, `cmd &`) with SIGINT and SIGQUIT
// ignored, and a blocked signal would be taken all the same.
sigset_t taken_set() {
  static const sigset_t set = [] {
    sigset_t s;
    sigemptyset(&s);
    for (int sig : kTaken) {
      struct sigaction now {};
      if (::sigaction(sig, nullptr, &now) == 0 && now.sa_handler == SIG_IGN) continue;
      sigaddset(&s, sig);
    }
    return s;
  }();
  return set;
}

// SIGPIPE's disposition when fairlock started, given back to the command.
bool& sigpipe_was_default() {
  static bool was = true;
  return was;
}

bool stops(int sig) { return sig == SIGINT || sig == SIGTERM || sig == SIGHUP || sig == SIGQUIT; }

void take(int sig, pid_t sender) {
  Router& r = router();
  std::unique_lock<std::mutex> lk(r.mu);
  const auto now = std::chrono::steady_clock::now();
  const bool again = sig == r.last_sig && sender == r.last_sender && now - r.last_at < kSameSignal;
  r.last_sig = sig;
  r.last_sender = sender;
  r.last_at = now;
  if (again) return;
  switch (r.phase) {
    case Phase::running: ::kill(-r.pgid, sig); return;
    case Phase::starting: r.kept = sig; return;
    case Phase::waiting:
    case Phase::holding:
      if (!stops(sig) || r.stopped_by) return;
      r.stopped_by = sig;
      lk.unlock();
      r.stop(sig);
      return;
    case Phase::done: return;
  }
}

}  // namespace

void block_signals(sigset_t* old) {
  sigset_t set = taken_set();
  sigaddset(&set, SIGTTOU);
  pthread_sigmask(SIG_BLOCK, &set, old);
  // A closed stdout or stderr (`| head`) is an error to ignore, not a death
  // that would leave the hold to expire with its lease.
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  struct sigaction before {};
  ::sigaction(SIGPIPE, &ignore, &before);
  sigpipe_was_default() = before.sa_handler == SIG_DFL;
}

void restore_sigpipe() {
  if (!sigpipe_was_default()) return;
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  ::sigaction(SIGPIPE, &dfl, nullptr);
}

void start_signal_thread(std::function<void(int)> stop) {
  router().stop = std::move(stop);
  std::thread([] {
    const sigset_t set = taken_set();
    for (;;) {
      siginfo_t info{};
      const int sig = sigwaitinfo(&set, &info);
      if (sig > 0) take(sig, info.si_pid);
    }
  }).detach();
}

void set_phase(Phase p) {
  std::lock_guard<std::mutex> lk(router().mu);
  router().phase = p;
}

void set_running(pid_t pgid) {
  Router& r = router();
  std::lock_guard<std::mutex> lk(r.mu);
  r.phase = Phase::running;
  r.pgid = pgid;
  if (r.kept) ::kill(-pgid, std::exchange(r.kept, 0));
}

void signal_command(int sig) {
  Router& r = router();
  std::lock_guard<std::mutex> lk(r.mu);
  if (r.phase == Phase::running) ::kill(-r.pgid, sig);
  if (r.phase == Phase::starting) r.kept = sig;
}

int enter_unless_stopped(Phase p) {
  Router& r = router();
  std::lock_guard<std::mutex> lk(r.mu);
  if (r.stopped_by == 0) r.phase = p;
  return r.stopped_by;
}

int stop_signal() {
  std::lock_guard<std::mutex> lk(router().mu);
  return router().stopped_by;
}

}  // namespace fairlock::cli
