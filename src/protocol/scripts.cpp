#include "protocol/scripts.h"

#include <stdexcept>
#include <string>

#include "fairlock_lua.h"

namespace fairlock::detail {

namespace {

const lua::EmbeddedScript& embedded(Script s) {
  // kScripts follows the lua/ directory; the enum must name each of them.
  static const auto table = [] {
    std::vector<const lua::EmbeddedScript*> t;
    for (Script s : kAllScripts) {
      const lua::EmbeddedScript* found = nullptr;
      for (const auto& e : lua::kScripts) {
        if (e.name == script_name(s)) found = &e;
      }
      if (!found) throw std::logic_error("fairlock: no lua script for " + std::string(script_name(s)));
      t.push_back(found);
    }
    return t;
  }();
  return *table[static_cast<std::size_t>(s)];
}

}  // namespace

std::string_view script_name(Script s) {
  switch (s) {
    case Script::acquire: return "acquire";
    case Script::release: return "release";
    case Script::cancel: return "cancel";
    case Script::heartbeat: return "heartbeat";
    case Script::inspect: return "inspect";
    case Script::evict: return "evict";
  }
  return "?";
}

std::string_view script_source(Script s) { return embedded(s).source; }

std::string_view script_sha(Script s) { return embedded(s).sha; }

std::string_view script_function(Script s) { return embedded(s).function; }

std::string_view library_source() { return lua::library_source; }

std::vector<std::string_view> script_command(const ScriptCall& call, ScriptWay way) {
  static const std::string key_count = std::to_string(kKeyCount);
  std::vector<std::string_view> command;
  command.reserve(3 + kKeyCount + call.args.size());
  if (way == ScriptWay::functions) {
    command.emplace_back("FCALL");
    command.push_back(script_function(call.script));
  } else {
    command.emplace_back("EVALSHA");
    command.push_back(script_sha(call.script));
  }
  command.push_back(key_count);
  for (const std::string* key : call.keys->in_order()) command.push_back(*key);
  for (const auto& a : call.args) command.push_back(a);
  return command;
}

}  // namespace fairlock::detail
