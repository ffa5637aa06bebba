// Starting the command of `fairlock run` and waiting for it, as a shell runs
// a foreground job: a process group of its own, given the terminal.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <string>
#include <vector>

namespace fairlock::cli {

struct Command {
  std::vector<std::string> argv;
  std::vector<std::string> env;  // "NAME=value" added to (or replacing in) the environment
  sigset_t mask;                 // the signal mask to run it with
};

// Whether the command is to get the terminal: stdin is one and fairlock's
// group is its foreground.
bool owns_terminal();
// fairlock's controlling terminal (/dev/tty, opened once), or -1.
int terminal_fd();
// Forks (from the calling thread, which must live until the command ends:
// the command is SIGKILLed when that thread ends) and execs; returns its
// pid, also its process group. With `terminal`, that group is made the
// terminal's foreground.
pid_t launch(const Command& c, bool terminal);
// Waits for the command to exit; returns its status as a shell reports it
// (128+N if signal N ended it). With `terminal`, takes the terminal back.
int wait_command(pid_t pid, bool terminal);

}  // namespace fairlock::cli
