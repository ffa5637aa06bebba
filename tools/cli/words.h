// The library's errors in the command's words: Options fields become the flags that set them.
#pragma once

#include <string>

namespace fairlock::cli {

// The flag (or argument) that sets a library option: "Options::key_prefix" -> "--prefix",
// "name" -> "NAME"; an option the command has no flag for is returned as it is.
std::string flag_for(const std::string& option);
// `what` with every Options identifier it names replaced by its flag.
std::string in_cli_words(std::string what);

}  // namespace fairlock::cli
