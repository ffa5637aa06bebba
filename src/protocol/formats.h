#pragma once
// The member and channel formats (docs/PROTOCOL.md): a queue member, the
// wake channels of a process, and a wake message.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "fairlock/options.h"

namespace fairlock::detail {

// A fresh queue member "<m><cid>:<token>:<lease>" (protocol version 6): the
// wake mode's letter, the client id and a 96-bit random token, lower-case
// hex, then the wait's lease in ms, decimal: a grant handed to the member
// inside another call (a release's handoff) lasts that lease, capped by its
// process's liveness deadline (docs/PROTOCOL.md).
constexpr std::size_t kTokenBytes = 12;
// With `sharded` (publish mode on Redis Cluster), the letter is 's'
// (protocol version 8): grants are SPUBLISHed on the shard channel.
std::string new_member(Notify mode, std::string_view client_id, std::chrono::milliseconds lease, bool sharded = false);
// A random lower-case hex string of 2 * bytes digits (client ids, tokens).
std::string random_hex(std::size_t bytes);
// The PUBLISH channel of one process: "<prefix>:wake:<cid>".
std::string wake_channel(std::string_view prefix, std::string_view client_id);
// The shard channel of one process and name (mode 's'): "<prefix>:{<name>}:wake:<cid>",
// in the name's cluster slot.
std::string shard_channel(std::string_view prefix, std::string_view name, std::string_view client_id);
// The keyspace channel of the key a grant to this process writes (keyspace mode).
std::string keyspace_channel(int db, std::string_view prefix, std::string_view name, std::string_view client_id);
// A wake message on the PUBLISH or shard channel: "<member> <fence>".
struct WakeMessage {
  std::string member;
  std::uint64_t fence = 0;
};
std::optional<WakeMessage> parse_wake_message(std::string_view payload);

}  // namespace fairlock::detail
