// Which options `fairlock` takes, where: the global ones and each subcommand's.
#pragma once

#include <string>

namespace fairlock::cli {

struct OptionSpec {
  const char* name;  // "--wait"
  char short_name;   // 'w', or 0
  bool takes_value;
  const char* commands;  // "" = global (any place before NAME); else " run status " ...
};

// The option spelled `word` ("--wait", "-w"), or null.
const OptionSpec* find_option(const std::string& word);
// Whether `spec` may be given to `command` ("" = before the subcommand word).
bool applies(const OptionSpec& spec, const std::string& command);

}  // namespace fairlock::cli
