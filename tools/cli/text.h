// How names, tokens and durations are written by the `fairlock` command.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace fairlock::cli {

// Printable rendering of a name or token (names may hold any byte but braces).
std::string printable(const std::string& s);
std::string json_string(const std::string& s);
std::string human(std::chrono::milliseconds d);
// Who a queue member is, from its client's registration: "HOST pid PID (DESCRIPTION)";
// "unknown client" when it registered none (or it expired).
std::string who(const std::string& host, std::int64_t pid, const std::string& description);

}  // namespace fairlock::cli
