#include "node/redirect.h"

#include <algorithm>
#include <string_view>

#include "net/reply.h"

namespace fairlock::detail {

namespace {

// "<slot> <host>:<port>" (the host may be an IPv6 address, or empty).
std::optional<Redirect> parse_target(Redirect::Kind kind, std::string_view rest) {
  const auto space = rest.find(' ');
  const auto colon = rest.rfind(':');
  if (space == std::string_view::npos || colon == std::string_view::npos || colon < space) return std::nullopt;
  int slot = 0;
  int port = 0;
  for (const char c : rest.substr(0, space)) {
    if (c < '0' || c > '9' || slot > 16383) return std::nullopt;
    slot = slot * 10 + (c - '0');
  }
  for (const char c : rest.substr(colon + 1)) {
    if (c < '0' || c > '9' || port > 65535) return std::nullopt;
    port = port * 10 + (c - '0');
  }
  if (space == 0 || slot > 16383 || port < 1 || port > 65535) return std::nullopt;
  return Redirect{kind, static_cast<std::uint16_t>(slot), std::string(rest.substr(space + 1, colon - space - 1)), port};
}

}  // namespace

std::optional<Redirect> redirect_of(const redisReply& r) {
  if (!is_error(r)) return std::nullopt;
  const std::string_view e = reply_error(r);
  const ServerRefusal refusal = server_refusal(e);
  if (refusal != ServerRefusal::moved && refusal != ServerRefusal::ask) return std::nullopt;
  const std::string_view rest = e.substr(std::min(e.size(), error_code(e).size() + 1));
  return parse_target(refusal == ServerRefusal::moved ? Redirect::Kind::moved : Redirect::Kind::ask, rest);
}

}  // namespace fairlock::detail
