#pragma once
// The keys of a name (docs/PROTOCOL.md): seven keys under the hash tag
// {name}, in the order the scripts take them, and how a key found by SCAN
// is read back as its name.
#include <array>
#include <cstddef>
#include <string>
#include <string_view>

namespace fairlock::detail {

constexpr std::size_t kMaxNameBytes = 1024;
// How many keys every script takes (lua/lib.lua checks #KEYS).
constexpr std::size_t kKeyCount = 7;

// The seven keys every script takes, all sharing the hash tag {name}.
// Throws BadOption("name", ...) for an empty or oversized name,
// or one with '{' or '}' (it would end the hash tag early).
struct Keys {
  Keys(std::string_view prefix, std::string_view name);
  // The keys as a script call's KEYS, in order (keys.cpp's table).
  std::array<const std::string*, kKeyCount> in_order() const;
  std::string q, w, h, g, seq, o, ev;
};

// "<prefix>:{<pattern>}:*" with the prefix's glob characters escaped: the
// keys of the names matching the glob `pattern`.
std::string key_pattern(std::string_view prefix, std::string_view pattern);
// The name of a key "<prefix>:{<name>}:<suffix>" whose suffix is g (a busy
// name) or seq (its record, beside any holder kept inline); "" otherwise.
std::string name_of_record_key(std::string_view key, std::string_view prefix);

}  // namespace fairlock::detail
