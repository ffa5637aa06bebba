#pragma once
// The Redis commands the embedded scripts call: what an ACL rule must allow
// and docs/PROTOCOL.md §4 lists (tests/test_docs.cpp, faults/test_security.cpp).
#include <cctype>
#include <set>
#include <string>

#include "fairlock_lua.h"

namespace fairlock::test {

// Every redis.call and redis.pcall of the scripts, lower-cased.
inline std::set<std::string> commands_the_scripts_call() {
  std::set<std::string> used;
  for (const auto& script : detail::lua::kScripts) {
    const std::string text(script.source);
    for (auto pos = text.find("call('"); pos != std::string::npos; pos = text.find("call('", pos + 1)) {
      const auto start = pos + 6;
      std::string command = text.substr(start, text.find('\'', start) - start);
      for (auto& ch : command) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      used.insert(command);
    }
  }
  return used;
}

}  // namespace fairlock::test
