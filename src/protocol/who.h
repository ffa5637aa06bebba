#pragma once
// Who a client is (docs/PROTOCOL.md "Who: client descriptions"): the key
// "<prefix>:client:{<cid>}" each client writes once per server it uses, its
// value "<pid> <started_ms> <host> <description>", and the client id of a
// queue member, so that inspect can name each holder's and waiter's process.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace fairlock::detail {

// The longest description a client registers (longer ones are cut).
constexpr std::size_t kMaxDescriptionBytes = 200;
// The longest host name kept (HOST_NAME_MAX is 64 on Linux).
constexpr std::size_t kMaxHostBytes = 255;

struct ClientDescription {
  std::string host;
  std::int64_t pid = 0;
  std::int64_t started_ms = 0;  // the client's wall clock (ms since the epoch) when it started
  std::string description;
};

// This process: gethostname, getpid, now, and `description` bounded (the
// program's name from /proc/self/comm if it is empty).
ClientDescription this_process(std::string_view description);
// At most kMaxDescriptionBytes, not cut inside a UTF-8 sequence; bytes below
// 0x20 and 0x7f become spaces.
std::string bounded_description(std::string_view text);

// "<prefix>:client:{<cid>}": its hash tag is the client id alone.
std::string who_key(std::string_view prefix, std::string_view client_id);
// How long a registration lives without a refresh: max(3 s, 3 x liveness),
// so that a killed client's is gone soon after its queue entries.
std::chrono::milliseconds who_expiry(std::chrono::milliseconds liveness);
std::string who_value(const ClientDescription& d);
// nullopt for a value that is not "<pid> <started_ms> <host> <description>".
std::optional<ClientDescription> parse_who_value(std::string_view value);
// The client id of a member "<m><cid>:<token>[:<lease>]"; "" if it has none.
std::string client_id_of_member(std::string_view member);

}  // namespace fairlock::detail
