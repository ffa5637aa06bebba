#pragma once
// The embedded Lua protocol: keys of a name, EVALSHA with NOSCRIPT recovery.
// Nothing above this file builds a KEYS array.
#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "connection.h"

namespace fairlock::detail {

enum class Script { acquire, release, cancel, heartbeat, inspect, evict };

std::string_view script_source(Script s);
std::string_view script_sha(Script s);
const char* script_name(Script s);

constexpr std::size_t kMaxNameBytes = 1024;

// The five keys every script takes, all sharing the hash tag {name}.
// Throws std::invalid_argument("name: ...") for an empty or oversized name,
// or one with '{' or '}' (it would end the hash tag early).
struct Keys {
  Keys(std::string_view prefix, std::string_view name);
  std::string q, w, h, g, seq;
};

struct ScriptCall {
  Script script;
  const Keys* keys;
  std::vector<std::string> args;
};

// Runs the calls pipelined (one round trip); on NOSCRIPT it loads the
// scripts and re-runs the calls that got it. Error replies are left in place
// for the caller.
std::vector<ReplyPtr> run_scripts(Connection& c, const std::vector<ScriptCall>& calls,
                                  std::atomic<std::uint64_t>& reloads);

}  // namespace fairlock::detail
