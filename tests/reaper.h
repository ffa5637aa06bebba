#pragma once
// For test mains that start servers and child processes.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>

namespace fairlock::test {

// If this process dies abruptly (a sanitizer's _exit, abort, SIGKILL by a
// timeout), the RedisServer destructors never run and the redis-servers and
// children it started would outlive it, holding ctest's output pipe open
// until ctest's timeout. So: this process leads its own process group (which
// they inherit), and a watchdog child waits for it to be gone, then kills the
// group.
inline void reap_children_when_we_die() {
  if (::isatty(0)) return;           // interactive: keep Ctrl-C reaching us
  if (::setpgid(0, 0) != 0) return;  // e.g. a session leader: go without
  int fds[2];
  if (::pipe(fds) != 0) return;
  ::fcntl(fds[1], F_SETFD, FD_CLOEXEC);  // only this process holds the write end
  pid_t pid = ::fork();
  if (pid < 0) return;
  if (pid == 0) {
    ::close(fds[1]);
    ::close(1);  // not a holder of ctest's output pipe
    ::close(2);
    char c = 0;
    while (::read(fds[0], &c, 1) != 0) {
      if (errno != EINTR) break;
    }
    ::kill(-::getpgrp(), SIGKILL);  // whatever is left, and this watchdog
    ::_exit(0);
  }
  ::close(fds[0]);
}

}  // namespace fairlock::test
