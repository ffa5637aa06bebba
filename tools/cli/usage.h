// The usage text of the `fairlock` command and the help of each subcommand.
#pragma once

#include <string>

namespace fairlock::cli {

extern const char* const kUsageText;

// The help of one command: its lines of the usage text, then the options.
std::string command_help(const std::string& command);

}  // namespace fairlock::cli
