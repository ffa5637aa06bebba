// The usage text of the `fairlock` command and the help of each subcommand.
#pragma once

#include <string>

namespace fairlock::cli {

extern const char* const kUsageText;

// The help of one command (of all, for an empty or unknown one), then the
// global options.
std::string command_help(const std::string& command);

}  // namespace fairlock::cli
