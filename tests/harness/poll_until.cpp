#include "poll_until.h"

#include <fstream>
#include <stdexcept>
#include <thread>

#include "redis_server.h"

namespace fairlock::test {

std::string ask(int port, const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
  try {
    Reply r = command_reply(port, argv, timeout);
    return r ? reply_text(r.get()) : "ERR:no reply";
  } catch (const std::exception&) {
    return "ERR:unreachable";
  }
}

std::chrono::milliseconds left(std::chrono::steady_clock::time_point end) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
}

void poll_until(const std::function<std::string()>& state, std::chrono::steady_clock::time_point end,
                const std::function<void(const std::string& missing)>& time_out) {
  for (;;) {
    std::string missing = state();
    if (missing.empty()) return;
    if (std::chrono::steady_clock::now() > end) {
      time_out(missing);
      throw std::logic_error("poll_until: time_out returned");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

std::string log_tail(const std::string& file, size_t lines) {
  std::ifstream in(file);
  std::vector<std::string> all;
  for (std::string l; std::getline(in, l);) all.push_back(l);
  std::string out;
  for (size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); ++i) out += "    " + all[i] + "\n";
  return out;
}

}  // namespace fairlock::test
