#include "env.h"

#include <cstdio>
#include <stdexcept>

#include "systems.h"

namespace fbench {

void say(const std::string& s) {
  std::printf("%s", s.c_str());
  std::fflush(stdout);
}

std::vector<double> ping_us(Env& e, int n) {
  std::vector<double> v;
  v.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    std::int64_t t0 = now_ns();
    Reply r = e.pinger->cmd({"PING"});
    std::int64_t t1 = now_ns();
    if (reply_str(r.get()) != "PONG") throw std::runtime_error("PING: " + reply_text(r.get()));
    v.push_back(static_cast<double>(t1 - t0) / 1e3);
  }
  return v;
}

void flushall(Env& e) {
  e.admin->cmd({"FLUSHALL"});
  load_fairlock_scripts(*e.admin);
}

}  // namespace fbench
