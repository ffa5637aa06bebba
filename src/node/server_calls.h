#pragma once
// The typed calls of protocol/calls.h run on one Server, each in one round
// trip (the heartbeat and release_all: one pipelined round trip for many),
// and `list`, which finds names with plain commands (SCAN, never KEYS).
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "fairlock/client.h"
#include "node/server.h"
#include "node/sync_wait.h"
#include "protocol/calls.h"

namespace fairlock::detail {

Acquired acquire(Server& server, const Keys& keys, const AcquireArgs& args);
// With Options::sync_replicas: a call followed, on its connection and in
// its round trip, by `sync`'s tail (node/sync_wait.h); `acks` is what WAIT
// answered.
template <class T>
struct Synced {
  T reply;
  int acks = -1;
};
Synced<Acquired> acquire(Server& server, const Keys& keys, const AcquireArgs& args, const SyncWait& sync);
// The confirmation of a grant not yet acknowledged (protocol/calls.h confirm_call).
Synced<BeatResult> confirm(Server& server, const ScriptCall& call, const SyncWait& sync);
bool release(Server& server, const Keys& keys, std::string_view member, std::uint32_t permits, bool queued_first);
struct ReleaseCall {
  const Keys* keys;
  std::string member;
  std::uint32_t permits;
};
// Many releases in one round trip (shutdown); error replies are ignored.
void release_all(Server& server, const std::vector<ReleaseCall>& calls);
CancelResult cancel(Server& server, const Keys& keys, std::string_view member, std::uint32_t permits);
// With `sync` (a renewal among them), the round ends with its tail and
// every result carries its acks.
std::vector<BeatReply> heartbeat(Server& server, std::chrono::milliseconds liveness, const std::vector<BeatName>& names,
                                 const SyncWait& sync = {});

QueueState inspect(Server& server, const Keys& keys, std::string name, std::size_t max_waiters);
// Fills each holder's and waiter's client_id from its member, and host, pid
// and description from its client's registration: one pipelined GET per
// distinct client id. Unregistered (or unreadable) clients stay empty / 0.
// `server_of` names the server holding a key (its slot's, on a cluster).
using ServerOfKey = std::function<Server&(const std::string& key)>;
void describe_clients(const ServerOfKey& server_of, std::string_view prefix, QueueState& state);
Evicted evict(Server& server, const Keys& keys, std::string_view member);
// Names with a g key matching the glob `pattern` (SCAN, never KEYS), with
// their holder and waiter counts.
std::vector<NameSummary> list(Server& server, std::string_view prefix, std::string_view pattern);

}  // namespace fairlock::detail
