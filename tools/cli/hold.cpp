#include "hold.h"

#include <sys/stat.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include "launch.h"
#include "signals.h"

namespace fairlock::cli {
namespace {

std::mutex g_mu;
std::condition_variable g_cv;
bool g_ended = false;

bool stdin_can_close() {
  struct stat st {};
  if (::fstat(STDIN_FILENO, &st) != 0) return false;
  if (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)) return true;
  return ::isatty(STDIN_FILENO) && owns_terminal();  // a terminal in the background would stop us (SIGTTIN)
}

void watch_stdin() {
  std::thread([] {
    char buf[512];
    for (;;) {
      const ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
      if (n == 0 || (n < 0 && errno != EINTR)) break;
    }
    end_hold();
  }).detach();
}

}  // namespace

int hold(std::uint64_t fence) {
  std::printf("%llu\n", static_cast<unsigned long long>(fence));
  std::fflush(stdout);
  set_phase(Phase::holding);
  if (stdin_can_close()) watch_stdin();
  std::unique_lock<std::mutex> lk(g_mu);
  g_cv.wait(lk, [] { return g_ended; });
  set_phase(Phase::done);
  return 0;
}

void end_hold() {
  {
    std::lock_guard<std::mutex> lk(g_mu);
    g_ended = true;
  }
  g_cv.notify_all();
}

}  // namespace fairlock::cli
