// fairlock_bench: the benchmark driver (`run`), its worker processes
// (`worker`, started by the driver) and a helper for bench/run.sh
// (`free-port`). Run everything with bench/run.sh.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <string>

#include "driver.h"
#include "worker.h"

namespace {
int free_port() {
  int s = ::socket(AF_INET, SOCK_STREAM, 0);
  if (s < 0) return 1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  if (::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    ::close(s);
    return 1;
  }
  std::printf("%d\n", ntohs(a.sin_port));
  ::close(s);
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  const std::string cmd = argc > 1 ? argv[1] : "";
  try {
    if (cmd == "worker") return fbench::worker_main(argc, argv);
    if (cmd == "run") return fbench::driver_main(argc, argv);
    if (cmd == "free-port") return free_port();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fairlock_bench %s: %s\n", cmd.c_str(), e.what());
    return 2;
  }
  std::fprintf(stderr,
               "usage: fairlock_bench run --port P [--smoke] [--json F] [--md F] [--chart-data DIR] [--micro F] "
               "[--only ABCDEFGHT]\n       (bench/run.sh starts a redis-server and calls this)\n");
  return 2;
}
