#pragma once
// What the multi-process harnesses (sentinel_set.h, redis_cluster.h) share: one question to
// one process that may be down or stopped, polling a state with a bound, and
// the end of a server's log for their time-out messages.
#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace fairlock::test {

// One command's reply as text (RedisServer::cmd's form) within `timeout`, or
// "ERR:unreachable" (a stopped process never answers, a killed one refuses).
std::string ask(int port, const std::vector<std::string>& argv,
                std::chrono::milliseconds timeout = std::chrono::milliseconds(1000));

// Time left until `end` (negative once past).
std::chrono::milliseconds left(std::chrono::steady_clock::time_point end);

// Calls `state` ("" when done, else what is missing) every 50 ms until it is
// done; if it is not done by `end`, calls `time_out` with what is missing
// (which must throw).
void poll_until(const std::function<std::string()>& state, std::chrono::steady_clock::time_point end,
                const std::function<void(const std::string& missing)>& time_out);

// The last `lines` lines of a file, each indented by 4 spaces.
std::string log_tail(const std::string& file, size_t lines);

}  // namespace fairlock::test
