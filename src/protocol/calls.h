#pragma once
// The typed calls of the scripts (docs/PROTOCOL.md): for each script, the
// call that builds its KEYS/ARGV and the parser of its reply. The only code
// that builds a script's arguments or reads its reply; nothing above it
// knows what either looks like. No I/O: node/server_calls.h runs them.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fairlock/client.h"
#include "protocol/keys.h"
#include "protocol/scripts.h"

struct redisReply;

namespace fairlock::detail {

// Fences and tickets are integers in [1, 2^53) (lua/lib.lua MAX_FENCE).
constexpr long long kMaxFence = 1LL << 53;

// Each parse_* throws the typed error of an error reply (ServerError, ...),
// and ServerError for a reply the scripts would not give.

struct AcquireArgs {
  std::string_view member;
  std::uint32_t permits = 1;
  std::chrono::milliseconds lease{0};
  std::chrono::milliseconds liveness{0};
  bool queue = true;   // false: never queue (try_lock)
  bool first = false;  // queue, and the member was never sent: mode "f" (lua/acquire.lua)
};
struct Acquired {
  // evicted: an operator evicted the member (Client::evict); it is not queued again.
  enum class Status { granted, queued, busy, evicted } status = Status::busy;
  std::uint64_t fence = 0;        // granted
  long long remaining_ms = 0;     // granted: ms from the script's TIME to the grant's deadline
  std::uint64_t ticket = 0;       // queued: becomes the fence if granted
  long long position = -1;        // queued: 0-based among waiters
  long long next_expiry_ms = -1;  // queued: ms until the earliest holder deadline, -1 none
};
ScriptCall acquire_call(const Keys& keys, const AcquireArgs& args);
Acquired parse_acquired(const redisReply& reply);

// release: true if the member held a grant and gave it up. `queued_first`:
// the member queued before it was granted, so its grant is not kept inline
// (a hint that saves the contended release a command; never trusted).
ScriptCall release_call(const Keys& keys, std::string_view member, std::uint32_t permits, bool queued_first);
bool parse_released(const redisReply& reply);

struct CancelResult {
  enum class Status { absent, left, granted } status = Status::absent;
  std::uint64_t fence = 0;     // granted: handed off while it was giving up
  long long remaining_ms = 0;  // granted: ms from the script's TIME to the grant's deadline
};
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
  // The heartbeat's floor (lua/heartbeat.lua): with `entries` every claim the
  // process has on the name, the latest ticket its claims learned; 0: none.
  std::uint64_t floor = 0;
};
struct BeatResult {
  // gone: neither waiting nor holding (expired); evicted: the same, because
  // an operator evicted it (Client::evict).
  enum class Status { gone = 0, waiting = 1, holding = 2, evicted = 3 } status = Status::gone;
  long long value = 0;  // waiting: position; holding: fence
  // waiting: ms until the earliest holder deadline (-1: none); holding: ms
  // from the script's TIME to the grant's deadline (after any renewal)
  long long ms = -1;
  // Not the script's: the replicas that acknowledged the round's writes
  // (Options::sync_replicas, node/sync_wait.h); -1 when none were asked to.
  int acks = -1;
};
struct BeatReply {
  std::string error;                // the name's call failed with this error reply
  std::vector<BeatResult> results;  // one per entry, in order
};
ScriptCall heartbeat_call(const BeatName& name, std::chrono::milliseconds liveness);
// An error reply is returned in BeatReply::error, not thrown.
BeatReply parse_beats(const redisReply& reply, const BeatName& name);

// The confirmation of a grant (Options::sync_replicas): the heartbeat of
// the one member that holds it, renewing it to `lease`; its reply says
// whether the grant is still there, with which fence and until when.
ScriptCall confirm_call(const Keys& keys, std::uint32_t permits, std::string_view member,
                        std::chrono::milliseconds lease, std::chrono::milliseconds liveness);
// An error reply is thrown typed.
BeatResult parse_confirmed(const redisReply& reply);

ScriptCall inspect_call(const Keys& keys, std::size_t max_waiters);
QueueState parse_inspected(const redisReply& reply, std::string name);
ScriptCall evict_call(const Keys& keys, std::string_view member);
Evicted parse_evicted(const redisReply& reply);

}  // namespace fairlock::detail
