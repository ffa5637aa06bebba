// The signals `fairlock run` takes: blocked in every thread, taken by one
// thread with sigwaitinfo, and sent where the phase of the run says.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <functional>

namespace fairlock::cli {

enum class Phase {
  waiting,   // in the queue: INT/TERM/HUP/QUIT end the wait
  starting,  // the command is being started: a signal is kept for it
  running,   // forwarded to the command's process group
  holding,   // holding without a command: INT/TERM/HUP/QUIT end the hold
  done,      // the command exited: ignored
};

// Blocks the signals the router takes (and SIGTTOU, so that tcsetpgrp works
// from the background) in the calling thread; call before any thread starts.
// `old` gets the mask to restore in the command.
void block_signals(sigset_t* old);
// Also: SIGPIPE is ignored by fairlock; restore_sigpipe() gives the command
// (in the forked child, async-signal-safe) the disposition fairlock found.
void restore_sigpipe();

// Starts the taking thread (detached, it lives until the process exits).
// `stop(sig)` is called for a stopping signal while waiting or holding.
void start_signal_thread(std::function<void(int)> stop);
void set_phase(Phase p);
// The command runs in process group `pgid`: a signal kept while starting is
// sent to it now.
void set_running(pid_t pgid);
// Sends `sig` to the command's group now (or as soon as it runs), not
// deduplicated (--kill-on-loss).
void signal_command(int sig);
// Enters phase `p` unless a stopping signal was taken already; that signal, or 0.
int enter_unless_stopped(Phase p);
// The stopping signal taken, or 0.
int stop_signal();

}  // namespace fairlock::cli
