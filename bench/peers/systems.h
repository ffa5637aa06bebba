#pragma once
// The baselines, on hiredis: the unfair lock, the sorted-set polling queue
// and the least a fair lock can do (a list), plus raw calls of fairlock's
// own scripts (no C++ client) to separate script cost from client cost.
#include <cstdint>
#include <functional>
#include <string>

#include "common.h"
#include "protocol/keys.h"  // the library's keys of a name (src/)

namespace fbench {

// Counts round trips, but only those that start before `until_ns` (the end
// of a measurement window).
struct RtCounter {
  std::int64_t until_ns = INT64_MAX;
  long long n = 0;
  void hit() {
    if (now_ns() <= until_ns) ++n;
  }
};

using StopFn = std::function<bool()>;

// Loads the owner-checked DEL used by both baselines; returns its SHA1.
std::string load_unlock_script(Redis& c);

// 1. The minimal unfair lock: SET key token NX PX lease, retried every 1 ms;
//    release = Lua owner-checked DEL. Returns false if stop() turned true
//    before it got the lock.
bool unfair_lock(Redis& c, const std::string& key, const std::string& token, const StopFn& stop, RtCounter& rt);
void unfair_unlock(Redis& c, const std::string& sha, const std::string& key, const std::string& token, RtCounter& rt);

// 2. The published sorted-set polling queue: each poll, in one round trip,
//    ZREMRANGEBYSCORE q -inf now (drop expired), ZADD q NX now+3000 token
//    (join; the score is both the order and the expiry, taken from the
//    client clock), ZRANGE q 0 0 (head?). If head: SET lock token NX PX
//    lease, and on success ZREM q token. Otherwise sleep 500 ms.
// first_sleep_ms: length of the first sleep (the poller's phase); later
// sleeps are 500 ms.
bool zset_lock(Redis& c, const std::string& qkey, const std::string& lkey, const std::string& token, const StopFn& stop,
               RtCounter& rt, int first_sleep_ms = 500);
void zset_unlock(Redis& c, const std::string& sha, const std::string& lkey, const std::string& token, RtCounter& rt);

// 3. The least a fair lock can do: RPUSH me to join a list whose head holds
//    the lock (1 means granted at once); otherwise wait for a message on
//    my channel. Release = one script: LPOP (the holder), LINDEX 0 (the
//    next), PUBLISH to the next one's channel only. Per contended grant: 5
//    commands (RPUSH, EVALSHA, LPOP, LINDEX, PUBLISH) and 2 round trips. No
//    liveness, no fences, no cancel: a waiter that dies stalls the queue.
struct ListLock {
  std::string key;             // the list
  std::string channel_prefix;  // + participant id = its channel
};
std::string load_list_release_script(Redis& c);
// Subscribes `sub` to `channel` and waits for the confirmation.
void list_subscribe(Redis& sub, const std::string& channel);
// Joins as `me` (subscribed on `sub` to channel_prefix + me); false if
// stop() turned true before the grant.
bool list_lock(Redis& c, Redis& sub, const ListLock& l, const std::string& me, const StopFn& stop, RtCounter& rt);
void list_unlock(Redis& c, const std::string& sha, const ListLock& l, RtCounter& rt);

// Redis's own time for the commands a system's clients sent: the top-level
// ones (scripts include what they ran) plus the plain commands the baseline
// sends itself (SET NX, RPUSH, the sorted-set queue's polls), which Redis
// cannot tell from the same commands run inside a script. One system per
// delta.
long long client_command_usec(const ServerDelta& d, const std::string& system);

// fairlock's protocol called directly: FCALL of the library's functions, as
// the client calls them by default (load_fairlock_scripts loads the library
// and, for SCRIPT LOAD users, the scripts), built by the library's own calls
// (src/protocol/calls.h). `mode` is acquire's: 'q' queue, 'f' queue a member
// never sent, 't' try.
using RawKeys = fairlock::detail::Keys;
void load_fairlock_scripts(Redis& c);
std::vector<std::string> raw_acquire_argv(const RawKeys& k, const std::string& member, int permits, long long lease_ms,
                                          long long liveness_ms, char mode);
std::vector<std::string> raw_release_argv(const RawKeys& k, const std::string& member, int permits);
std::vector<std::string> raw_heartbeat_argv(const RawKeys& k, int permits, long long liveness_ms,
                                            const std::vector<std::string>& members, long long lease_ms);
// A member as the client makes it: mode char, 16 hex client id, ':', 24 hex
// (a 96-bit token), ':', the wait's lease in ms (protocol version 6).
std::string fake_member(char mode, std::uint64_t cid, std::uint64_t n, long long lease_ms);

}  // namespace fbench
