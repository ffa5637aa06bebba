#pragma once
// The client side of the Lua protocol (docs/PROTOCOL.md): the keys of a
// name, the member and channel formats, the script table, and one typed call
// per script. The only code that builds a KEYS/ARGV array or reads a
// script's reply; nothing above it knows what either looks like.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fairlock/client.h"
#include "fairlock/errors.h"
#include "fairlock/options.h"
#include "net/connection.h"

namespace fairlock::detail {

class Server;

// One value per lua/<op>.lua (besides lib.lua, the prelude of them all).
enum class Script { acquire, release, cancel, heartbeat, inspect, evict };
inline constexpr Script kAllScripts[] = {Script::acquire,   Script::release, Script::cancel,
                                         Script::heartbeat, Script::inspect, Script::evict};
std::string_view script_name(Script s);
// What SCRIPT LOAD loads: lib.lua, a newline, then <op>.lua.
std::string_view script_source(Script s);
std::string_view script_sha(Script s);
// The same script as a function of the library, and the library's text
// for FUNCTION LOAD (cmake/EmbedLua.cmake).
std::string_view script_function(Script s);
std::string_view library_source();

constexpr std::size_t kMaxNameBytes = 1024;
// Fences and tickets are integers in [1, 2^53) (lua/lib.lua MAX_FENCE).
constexpr long long kMaxFence = 1LL << 53;

// The six keys every script takes, all sharing the hash tag {name}.
// Throws std::invalid_argument("name: ...") for an empty or oversized name,
// or one with '{' or '}' (it would end the hash tag early).
struct Keys {
  Keys(std::string_view prefix, std::string_view name);
  std::string q, w, h, g, seq, o;
};

// A fresh queue member "<m><cid>:<token>:<lease>" (protocol version 6): the
// wake mode's letter, the client id and a 96-bit random token, lower-case
// hex, then the wait's lease in ms, decimal: a grant handed to the member
// inside another call (a release's handoff) lasts that lease, capped by its
// process's liveness deadline (docs/PROTOCOL.md).
constexpr std::size_t kTokenBytes = 12;
std::string new_member(Notify mode, std::string_view client_id, std::chrono::milliseconds lease);
// A random lower-case hex string of 2 * bytes digits (client ids, tokens).
std::string random_hex(std::size_t bytes);
// The PUBLISH channel of one process: "<prefix>:wake:<cid>".
std::string wake_channel(std::string_view prefix, std::string_view client_id);
// The keyspace channel of the key a grant to this process writes (keyspace mode).
std::string keyspace_channel(int db, std::string_view prefix, std::string_view name, std::string_view client_id);
// A wake message on the PUBLISH channel: "<member> <fence>".
struct WakeMessage {
  std::string member;
  std::uint64_t fence = 0;
};
std::optional<WakeMessage> parse_wake_message(std::string_view payload);

// One call of a script on a name's keys (see ScriptRunner).
struct ScriptCall {
  Script script;
  const Keys* keys;
  std::vector<std::string> args;
};

// ---------------------------------------------------------------- typed calls

struct AcquireArgs {
  std::string_view member;
  std::uint32_t permits = 1;
  std::chrono::milliseconds lease{0};
  std::chrono::milliseconds liveness{0};
  bool queue = true;   // false: never queue (try_lock)
  bool first = false;  // queue, and the member was never sent: mode "f" (lua/acquire.lua)
};
struct Acquired {
  enum class Status { granted, queued, busy } status = Status::busy;
  std::uint64_t fence = 0;        // granted
  long long remaining_ms = 0;     // granted: ms from the script's TIME to the grant's deadline
  std::uint64_t ticket = 0;       // queued: becomes the fence if granted
  long long position = -1;        // queued: 0-based among waiters
  long long next_expiry_ms = -1;  // queued: ms until the earliest holder deadline, -1 none
};
Acquired acquire(Server& server, const Keys& keys, const AcquireArgs& args);
// The same call in two halves, for a caller that pipelines many (the async
// driver). parse_* throw the typed error of an error reply.
ScriptCall acquire_call(const Keys& keys, const AcquireArgs& args);
Acquired parse_acquired(const redisReply& reply);

// release: true if the member held a grant and gave it up. `queued_first`:
// the member queued before it was granted, so its grant is not kept inline
// (a hint that saves the contended release a command; never trusted).
bool release(Server& server, const Keys& keys, std::string_view member, std::uint32_t permits, bool queued_first);
ScriptCall release_call(const Keys& keys, std::string_view member, std::uint32_t permits, bool queued_first);
bool parse_released(const redisReply& reply);
struct ReleaseCall {
  const Keys* keys;
  std::string member;
  std::uint32_t permits;
};
// Many releases in one round trip (shutdown); error replies are ignored.
void release_all(Server& server, const std::vector<ReleaseCall>& calls);

struct CancelResult {
  enum class Status { absent, left, granted } status = Status::absent;
  std::uint64_t fence = 0;     // granted: handed off while it was giving up
  long long remaining_ms = 0;  // granted: ms from the script's TIME to the grant's deadline
};
CancelResult cancel(Server& server, const Keys& keys, std::string_view member, std::uint32_t permits);
ScriptCall cancel_call(const Keys& keys, std::string_view member, std::uint32_t permits);
CancelResult parse_cancelled(const redisReply& reply);

// The heartbeat of one process: one call per name, all in one pipeline.
struct BeatEntry {
  std::string member;
  std::chrono::milliseconds lease;  // 0: a holder's check: reported, not renewed
};
struct BeatName {
  const Keys* keys;
  std::uint32_t permits;
  std::vector<BeatEntry> entries;
};
struct BeatResult {
  enum class Status { gone = 0, waiting = 1, holding = 2 } status = Status::gone;
  long long value = 0;  // waiting: position; holding: fence
  // waiting: ms until the earliest holder deadline (-1: none); holding: ms
  // from the script's TIME to the grant's deadline (after any renewal)
  long long ms = -1;
};
struct BeatReply {
  std::string error;                // the name's call failed with this error reply
  std::vector<BeatResult> results;  // one per entry, in order
};
std::vector<BeatReply> heartbeat(Server& server, std::chrono::milliseconds liveness,
                                 const std::vector<BeatName>& names);

QueueState inspect(Server& server, const Keys& keys, std::string name, std::size_t max_waiters);
Evicted evict(Server& server, const Keys& keys, std::string_view member);
// Names with a g key matching the glob `pattern` (SCAN, never KEYS), with
// their holder and waiter counts.
std::vector<NameSummary> list(Server& server, std::string_view prefix, std::string_view pattern);

}  // namespace fairlock::detail
