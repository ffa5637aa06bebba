// Several processes take turns on one fair lock and report who got in when.
//   fairlock_demo [PROCESSES] [ROUNDS]        (FAIRLOCK_URL selects the server)
// Each process queues for the lock ROUNDS times; while it holds the lock it
// appends its line to a shared log. Grants follow arrival order, so the
// processes take strict turns and every fence is larger than the last.
#include <fairlock/fairlock.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

int participant(const std::string& url, int id, int rounds, std::chrono::steady_clock::time_point t0) {
  fairlock::Options opts;
  opts.url = url;
  fairlock::Client client(opts);
  fairlock::FairLock lock(client, "demo:printer");
  for (int r = 0; r < rounds; ++r) {
    double asked = ms_since(t0);
    std::lock_guard<fairlock::FairLock> guard(lock);  // waits its turn
    std::printf("%8.1f ms  process %d (pid %d) got the lock  fence=%-4llu waited %6.1f ms\n", ms_since(t0), id,
                static_cast<int>(getpid()), static_cast<unsigned long long>(lock.fence()), ms_since(t0) - asked);
    std::fflush(stdout);
    std::this_thread::sleep_for(std::chrono::milliseconds(30));  // "work" under the lock
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int procs = argc > 1 ? std::atoi(argv[1]) : 4;
  int rounds = argc > 2 ? std::atoi(argv[2]) : 3;
  const char* env = std::getenv("FAIRLOCK_URL");
  std::string url = env ? env : "redis://127.0.0.1:6379";
  if (procs < 1 || rounds < 1) {
    std::fprintf(stderr, "usage: fairlock_demo [PROCESSES>=1] [ROUNDS>=1]\n");
    return 2;
  }
  std::printf("%d processes, %d rounds each, one fair lock on %s\n", procs, rounds, url.c_str());
  std::fflush(stdout);
  auto t0 = std::chrono::steady_clock::now();
  std::vector<pid_t> kids;
  for (int i = 0; i < procs; ++i) {
    pid_t pid = fork();
    if (pid == 0) {
      try {
        _exit(participant(url, i + 1, rounds, t0));
      } catch (const std::exception& e) {
        std::fprintf(stderr, "demo: process %d: %s\n", i + 1, e.what());
        _exit(1);
      }
    }
    kids.push_back(pid);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  int failed = 0;
  for (pid_t k : kids) {
    int st = 0;
    waitpid(k, &st, 0);
    failed += !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  std::printf("%s\n", failed ? "some processes failed" : "done: every process got its turns, one at a time");
  return failed ? 1 : 0;
}
