#include "protocol/keys.h"

#include <stdexcept>

#include "fairlock/errors.h"

namespace fairlock::detail {

Keys::Keys(std::string_view prefix, std::string_view name) {
  if (name.empty()) throw BadOption("name", "must not be empty");
  if (name.size() > kMaxNameBytes) {
    throw BadOption("name", "longer than " + std::to_string(kMaxNameBytes) + " bytes");
  }
  if (name.find_first_of("{}") != std::string_view::npos) {
    throw BadOption("name", "must not contain '{' or '}' (they would break the hash tag)");
  }
  std::string base;
  base.reserve(prefix.size() + name.size() + 8);
  base.append(prefix).append(":{").append(name).append("}:");
  q = base + "q";
  w = base + "w";
  h = base + "h";
  g = base + "g";
  seq = base + "seq";
  o = base + "o";
  ev = base + "ev";
}

std::string key_pattern(std::string_view prefix, std::string_view pattern) {
  std::string match;
  for (char c : prefix) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') match.push_back('\\');
    match.push_back(c);
  }
  return match.append(":{").append(pattern).append("}:*");
}

std::string name_of_record_key(std::string_view key, std::string_view prefix) {
  const std::string head = std::string(prefix) + ":{";
  if (key.substr(0, head.size()) != head) return "";
  for (std::string_view tail : {"}:g", "}:seq"}) {
    if (key.size() >= head.size() + tail.size() && key.substr(key.size() - tail.size()) == tail) {
      return std::string(key.substr(head.size(), key.size() - head.size() - tail.size()));
    }
  }
  return "";
}

}  // namespace fairlock::detail
