#pragma once
// The script table: one Script per lua/<op>.lua, its text as SCRIPT LOAD
// and FUNCTION LOAD take it (embedded at build time by cmake/EmbedLua.cmake),
// and one call of a script on a name's keys.
#include <string>
#include <string_view>
#include <vector>

#include "protocol/keys.h"

namespace fairlock::detail {

// One value per lua/<op>.lua (besides lib.lua and upgrade.lua, the prelude of them all).
enum class Script { acquire, release, cancel, heartbeat, inspect, evict };
inline constexpr Script kAllScripts[] = {Script::acquire,   Script::release, Script::cancel,
                                         Script::heartbeat, Script::inspect, Script::evict};
std::string_view script_name(Script s);
// What SCRIPT LOAD loads: the prelude (lib.lua, a newline, upgrade.lua), a
// newline, then <op>.lua (docs/PROTOCOL.md section 4).
std::string_view script_source(Script s);
std::string_view script_sha(Script s);
// The same script as a function of the library, and the library's text
// for FUNCTION LOAD (cmake/EmbedLua.cmake).
std::string_view script_function(Script s);
std::string_view library_source();

// One call of a script on a name's keys (see ScriptRunner).
struct ScriptCall {
  Script script;
  const Keys* keys;
  std::vector<std::string> args;
};

// How a server runs the scripts: as functions of the library, or by SHA.
enum class ScriptWay { functions, evalsha };
// The command that runs `call`: FCALL <function> (or EVALSHA <sha>), the
// count of keys, the keys in order, the arguments. Views into `call`, which
// must outlive them.
std::vector<std::string_view> script_command(const ScriptCall& call, ScriptWay way);

}  // namespace fairlock::detail
