#include "launch.h"

#include <sys/prctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "exit_codes.h"

extern char** environ;

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
  if (terminal) ::tcsetpgrp(STDIN_FILENO, ::getpid());  // SIGTTOU is still blocked here
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

bool owns_terminal() { return ::isatty(STDIN_FILENO) && ::tcgetpgrp(STDIN_FILENO) == ::getpgrp(); }

pid_t launch(const Command& c, bool terminal) {
  const std::vector<std::string> env = environment_with(c.env);
  std::vector<char*> argv = pointers(c.argv), envp = pointers(env);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) exec_child(argv.data(), envp.data(), c.mask, parent, terminal);
  ::setpgid(pid, pid);  // also here: whichever runs first
  if (terminal) ::tcsetpgrp(STDIN_FILENO, pid);
  return pid;
}

int wait_command(pid_t pid, bool terminal) {
  int status = 0;
  for (;;) {
    if (::waitpid(pid, &status, terminal ? WUNTRACED : 0) < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(std::string("waitpid: ") + std::strerror(errno));
    }
    if (!WIFSTOPPED(status)) break;
    // ^Z: stop as a job does, with the terminal back to the shell; on `fg`
    // (SIGCONT) give it to the command again and continue it.
    ::tcsetpgrp(STDIN_FILENO, ::getpgrp());
    ::kill(::getpid(), SIGSTOP);
    ::tcsetpgrp(STDIN_FILENO, pid);
    ::kill(-pid, SIGCONT);
  }
  if (terminal) ::tcsetpgrp(STDIN_FILENO, ::getpgrp());
  return WIFEXITED(status) ? WEXITSTATUS(status) : kSignalBase + WTERMSIG(status);
}

}  // namespace fairlock::cli
