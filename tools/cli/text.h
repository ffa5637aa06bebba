// How names, tokens and durations are written by the `fairlock` command.
#pragma once

#include <chrono>
#include <string>

namespace fairlock::cli {

// Printable rendering of a name or token (names may hold any byte but braces).
std::string printable(const std::string& s);
std::string json_string(const std::string& s);
std::string human(std::chrono::milliseconds d);

}  // namespace fairlock::cli
