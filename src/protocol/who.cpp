#include "protocol/who.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <fstream>

namespace fairlock::detail {

namespace {

// Bytes below 0x20 and DEL become `with`; at most `max` bytes, not cutting a
// UTF-8 sequence (continuation bytes are 10xxxxxx).
std::string cleaned(std::string_view text, std::size_t max, char with) {
  if (text.size() > max) {
    std::size_t cut = max;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
    text = text.substr(0, cut);
  }
  std::string out(text);
  for (char& c : out) {
    const auto b = static_cast<unsigned char>(c);
    if (b < 0x20 || b == 0x7f) c = with;
  }
  return out;
}

std::string program_name() {
  std::ifstream comm("/proc/self/comm");
  std::string name;
  std::getline(comm, name);
  return name;
}

std::string host_name() {
  char buf[kMaxHostBytes + 1] = {};
  if (::gethostname(buf, kMaxHostBytes) != 0) return "?";
  std::string host = cleaned(buf, kMaxHostBytes, '?');
  std::replace(host.begin(), host.end(), ' ', '?');  // the value's separator
  return host.empty() ? "?" : host;
}

std::optional<std::int64_t> integer(std::string_view s) {
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

}  // namespace

std::string bounded_description(std::string_view text) { return cleaned(text, kMaxDescriptionBytes, ' '); }

ClientDescription this_process(std::string_view description) {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  ClientDescription d;
  d.host = host_name();
  d.pid = ::getpid();
  d.started_ms = std::chrono::duration_cast<std::chrono::milliseconds>(now).count();
  const std::string fallback = description.empty() ? program_name() : std::string();
  d.description = bounded_description(description.empty() ? std::string_view{fallback} : description);
  return d;
}

std::string who_key(std::string_view prefix, std::string_view client_id) {
  std::string key(prefix);
  key += ":client:{";
  key += client_id;
  key += '}';
  return key;
}

std::chrono::milliseconds who_expiry(std::chrono::milliseconds liveness) {
  return std::max<std::chrono::milliseconds>(std::chrono::seconds(3), 3 * liveness);
}

std::string who_value(const ClientDescription& d) {
  return std::to_string(d.pid) + ' ' + std::to_string(d.started_ms) + ' ' + d.host + ' ' + d.description;
}

std::optional<ClientDescription> parse_who_value(std::string_view value) {
  std::string_view parts[3];
  for (auto& part : parts) {
    const auto space = value.find(' ');
    if (space == std::string_view::npos) return std::nullopt;
    part = value.substr(0, space);
    value.remove_prefix(space + 1);
  }
  const auto pid = integer(parts[0]);
  const auto started = integer(parts[1]);
  if (!pid || !started || parts[2].empty()) return std::nullopt;
  return ClientDescription{std::string(parts[2]), *pid, *started, std::string(value)};
}

std::string client_id_of_member(std::string_view member) {
  const auto colon = member.find(':');
  if (colon == std::string_view::npos || colon < 2) return "";
  return std::string(member.substr(1, colon - 1));
}

}  // namespace fairlock::detail
