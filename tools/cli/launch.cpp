#include "launch.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "exit_codes.h"
#include "signals.h"

namespace fairlock::cli {
namespace {

std::vector<std::string> environment_with(const std::vector<std::string>& added) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    bool replaced = false;
    for (const auto& a : added) replaced = replaced || entry.compare(0, a.find('=') + 1, a, 0, a.find('=') + 1) == 0;
    if (!replaced) env.push_back(entry);
  }
  env.insert(env.end(), added.begin(), added.end());
  return env;
}

std::vector<char*> pointers(const std::vector<std::string>& v) {
  std::vector<char*> out;
  for (const auto& s : v) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

void say(const char* s) { (void)!::write(STDERR_FILENO, s, std::strlen(s)); }

// In the forked child: only async-signal-safe calls (fairlock has threads).
[[noreturn]] void exec_child(char** argv, char** envp, const sigset_t& mask, pid_t parent, bool terminal) {
  ::setpgid(0, 0);
  if (terminal) ::tcsetpgrp(terminal_fd(), ::getpid());  // SIGTTOU is still blocked here
  restore_sigpipe();
  // SIGKILL, not SIGTERM: this fires only when fairlock died without
  // forwarding anything (SIGKILL, a crash); the hold may lapse any moment
  // then, and a command could ignore or outlive a SIGTERM.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(kSoftware);  // fairlock is gone already
  ::pthread_sigmask(SIG_SETMASK, &mask, nullptr);
  ::execvpe(argv[0], argv, envp);
  const int err = errno;
  say("fairlock: cannot run ");
  say(argv[0]);
  say(": ");
  say(std::strerror(err));
  say("\n");
  ::_exit(err == ENOENT ? 127 : 126);
}

}  // namespace

int terminal_fd() {
  static const int fd = ::open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);  // -1: no controlling terminal
  return fd;
}

bool owns_terminal() { return terminal_fd() >= 0 && ::tcgetpgrp(terminal_fd()) == ::getpgrp(); }

pid_t launch(const Command& c, bool terminal) {
  const std::vector<std::string> env = environment_with(c.env);
  std::vector<char*> argv = pointers(c.argv), envp = pointers(env);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) exec_child(argv.data(), envp.data(), c.mask, parent, terminal);
  ::setpgid(pid, pid);  // also here: whichever runs first
  if (terminal) ::tcsetpgrp(terminal_fd(), pid);
  return pid;
}

// The command stopped (^Z, or SIGTTIN/SIGTTOU: it used the terminal from the
// background): stop as a job does, with the terminal back to fairlock's
// group; once continued (fg, bg, SIGCONT), give the terminal to the command
// if fairlock has it now, and continue the command. Whether it has it now.
bool stop_with(pid_t pid, bool terminal) {
  if (terminal) ::tcsetpgrp(terminal_fd(), ::getpgrp());
  ::kill(::getpid(), SIGSTOP);
  const bool now = owns_terminal();
  if (now) ::tcsetpgrp(terminal_fd(), pid);
  ::kill(-pid, SIGCONT);
  return now;
}

int wait_command(pid_t pid, bool terminal) {
  int status = 0;
  for (;;) {
    if (::waitpid(pid, &status, WUNTRACED) < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(std::string("waitpid: ") + std::strerror(errno));
    }
    if (!WIFSTOPPED(status)) break;
    terminal = stop_with(pid, terminal);
  }
  if (terminal) ::tcsetpgrp(terminal_fd(), ::getpgrp());
  return WIFEXITED(status) ? WEXITSTATUS(status) : kSignalBase + WTERMSIG(status);
}

}  // namespace fairlock::cli
