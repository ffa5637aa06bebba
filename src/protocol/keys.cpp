#include "protocol/keys.h"

#include <iterator>
#include <stdexcept>

#include "fairlock/errors.h"

namespace fairlock::detail {

namespace {

// Every key of a name, in the order of the scripts' KEYS, with its suffix:
// the one list of them (tools/check_layers.py reads the suffixes here).
struct KeyEntry {
  std::string Keys::*member;
  std::string_view suffix;
};
constexpr KeyEntry kKeyTable[] = {{&Keys::q, "q"},     {&Keys::w, "w"}, {&Keys::h, "h"},  {&Keys::g, "g"},
                                  {&Keys::seq, "seq"}, {&Keys::o, "o"}, {&Keys::ev, "ev"}};
static_assert(std::size(kKeyTable) == kKeyCount, "kKeyCount is the table's size");

}  // namespace

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
  for (const KeyEntry& key : kKeyTable) (this->*key.member = base).append(key.suffix);
}

std::array<const std::string*, kKeyCount> Keys::in_order() const {
  std::array<const std::string*, kKeyCount> keys{};
  for (std::size_t i = 0; i < kKeyCount; ++i) keys[i] = &(this->*kKeyTable[i].member);
  return keys;
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
