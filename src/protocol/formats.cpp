#include "protocol/formats.h"

#include <sys/random.h>

#include <cerrno>
#include <cstdlib>
#include <stdexcept>

#include "fairlock/errors.h"

namespace fairlock::detail {

std::string random_hex(std::size_t bytes) {
  unsigned char buf[32];
  if (bytes > sizeof buf) throw std::invalid_argument("random_hex: at most 32 bytes");
  std::size_t got = 0;
  while (got < bytes) {
    ssize_t n = getrandom(buf + got, bytes - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error("fairlock: getrandom failed");
    }
    got += static_cast<std::size_t>(n);
  }
  static const char* digits = "0123456789abcdef";
  std::string out;
  out.reserve(bytes * 2);
  for (std::size_t i = 0; i < bytes; ++i) {
    out.push_back(digits[buf[i] >> 4]);
    out.push_back(digits[buf[i] & 15]);
  }
  return out;
}

std::string new_member(Notify mode, std::string_view client_id, std::chrono::milliseconds lease, bool sharded) {
  char letter = mode == Notify::publish ? (sharded ? 's' : 'p') : mode == Notify::keyspace ? 'k' : 'n';
  std::string m(1, letter);
  m.append(client_id).append(":").append(random_hex(kTokenBytes)).append(":").append(std::to_string(lease.count()));
  return m;
}

std::string wake_channel(std::string_view prefix, std::string_view client_id) {
  return std::string(prefix).append(":wake:").append(client_id);
}

std::string shard_channel(std::string_view prefix, std::string_view name, std::string_view client_id) {
  return std::string(prefix).append(":{").append(name).append("}:wake:").append(client_id);
}

std::string keyspace_channel(int db, std::string_view prefix, std::string_view name, std::string_view client_id) {
  return "__keyspace@" + std::to_string(db) + "__:" + shard_channel(prefix, name, client_id);
}

std::optional<WakeMessage> parse_wake_message(std::string_view payload) {
  auto space = payload.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  std::string_view digits = payload.substr(space + 1);
  if (digits.empty() || digits.size() > 16 || digits.find_first_not_of("0123456789") != std::string_view::npos) {
    return std::nullopt;  // not a fence: not from a fairlock script
  }
  return WakeMessage{std::string(payload.substr(0, space)), std::strtoull(std::string(digits).c_str(), nullptr, 10)};
}

}  // namespace fairlock::detail
