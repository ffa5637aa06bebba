#include "node/server_calls.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "fairlock/errors.h"
#include "net/call_deadline.h"
#include "node/redirect.h"
#include "protocol/keys.h"
#include "protocol/who.h"

namespace fairlock::detail {

using std::chrono::milliseconds;

Acquired acquire(Server& server, const Keys& keys, const AcquireArgs& a) {
  return parse_acquired(*server.run_one(acquire_call(keys, a)));
}

namespace {

// One call and the sync tail, in one round trip on one connection.
template <class T, class Parse>
Synced<T> run_synced(Server& server, const ScriptCall& call, const SyncWait& sync, Parse parse) {
  const SyncTail tail(sync);
  std::vector<ScriptCall> calls{call};
  std::vector<ReplyPtr> replies = server.run_batch(calls, Lane::commands, tail.commands());
  T reply = parse(*replies.front());
  return Synced<T>{std::move(reply), tail.acks(replies)};
}

}  // namespace

Synced<Acquired> acquire(Server& server, const Keys& keys, const AcquireArgs& a, const SyncWait& sync) {
  return run_synced<Acquired>(server, acquire_call(keys, a), sync, parse_acquired);
}

Synced<BeatResult> confirm(Server& server, const ScriptCall& call, const SyncWait& sync) {
  return run_synced<BeatResult>(server, call, sync, parse_confirmed);
}

bool release(Server& server, const Keys& keys, std::string_view member, std::uint32_t permits, bool queued_first) {
  return parse_released(*server.run_one(release_call(keys, member, permits, queued_first)));
}

void release_all(Server& server, const std::vector<ReleaseCall>& calls) {
  std::vector<ScriptCall> batch;
  batch.reserve(calls.size());
  for (const auto& c : calls) batch.push_back(release_call(*c.keys, c.member, c.permits, false));
  const std::vector<ReplyPtr> replies = server.run_batch(batch, Lane::commands);
  // On a cluster, a release whose slot moved (a batch only learns where to)
  // is sent on alone, which follows the redirection; one that fails (its
  // new owner stalled) does not keep the others from running, and all of
  // them together hold the caller (shutdown) no longer than kUnregisterBound.
  const CallDeadline bound(std::chrono::steady_clock::now() + Server::kUnregisterBound);
  for (std::size_t i = 0; i < replies.size(); ++i) {
    if (!redirect_of(*replies[i])) continue;
    try {
      server.run_one(std::move(batch[i]));
    } catch (const std::exception&) {  // it expires with its lease
    }
  }
}

CancelResult cancel(Server& server, const Keys& keys, std::string_view member, std::uint32_t permits) {
  return parse_cancelled(*server.run_one(cancel_call(keys, member, permits)));
}

std::vector<BeatReply> heartbeat(Server& server, milliseconds liveness, const std::vector<BeatName>& names,
                                 const SyncWait& sync) {
  std::vector<ScriptCall> calls;
  calls.reserve(names.size());
  for (const auto& n : names) calls.push_back(heartbeat_call(n, liveness));
  std::optional<SyncTail> tail;
  if (sync.replicas > 0) tail.emplace(sync);
  std::vector<ReplyPtr> replies =
      server.run_batch(calls, Lane::heartbeat, tail ? tail->commands() : std::vector<Argv>{});
  const int acks = tail ? tail->acks(replies) : -1;
  std::vector<BeatReply> out;
  out.reserve(names.size());
  for (std::size_t i = 0; i < names.size(); ++i) {
    out.push_back(parse_beats(*replies[i], names[i]));
    for (auto& r : out.back().results) r.acks = acks;
  }
  return out;
}

QueueState inspect(Server& server, const Keys& keys, std::string name, std::size_t max_waiters) {
  return parse_inspected(*server.run_one(inspect_call(keys, max_waiters)), std::move(name));
}

namespace {

template <class Entry>
void set_client_id(Entry& e) {
  e.client_id = client_id_of_member(e.token);
}

template <class Entry>
void set_description(Entry& e, const std::map<std::string, ClientDescription>& known) {
  const auto it = known.find(e.client_id);
  if (it == known.end()) return;
  e.host = it->second.host;
  e.pid = it->second.pid;
  e.description = it->second.description;
}

// The registrations of client ids `ids`, all on `server`, in one round trip.
void read_descriptions(Server& server, std::string_view prefix, const std::vector<std::string>& ids,
                       std::map<std::string, ClientDescription>& known) {
  std::vector<std::string> keys;
  for (const auto& id : ids) keys.push_back(who_key(prefix, id));
  std::vector<Argv> gets;
  for (const auto& k : keys) gets.push_back(Argv{"GET", k});
  const std::vector<ReplyPtr> replies = server.pipeline(gets);
  for (std::size_t i = 0; i < replies.size(); ++i) {
    if (is_nil(*replies[i]) || is_error(*replies[i])) continue;  // none, or no right to GET it
    if (auto d = parse_who_value(reply_string(*replies[i]))) known.emplace(ids[i], std::move(*d));
  }
}

}  // namespace

// Each GET names its key alone (the key's hash tag is the client id), never
// with a name's keys: under Cluster each goes to its own slot's node, the
// GETs of one node in one round trip.
void describe_clients(const ServerOfKey& server_of, std::string_view prefix, QueueState& state) {
  for (auto& h : state.holders) set_client_id(h);
  for (auto& w : state.waiters) set_client_id(w);
  std::set<std::string> ids;
  for (const auto& h : state.holders) ids.insert(h.client_id);
  for (const auto& w : state.waiters) ids.insert(w.client_id);
  ids.erase("");
  std::map<Server*, std::vector<std::string>> ids_at;
  for (const auto& id : ids) ids_at[&server_of(who_key(prefix, id))].push_back(id);
  std::map<std::string, ClientDescription> known;
  for (const auto& [server, at] : ids_at) read_descriptions(*server, prefix, at, known);
  for (auto& h : state.holders) set_description(h, known);
  for (auto& w : state.waiters) set_description(w, known);
}

Evicted evict(Server& server, const Keys& keys, std::string_view member) {
  return parse_evicted(*server.run_one(evict_call(keys, member)));
}

namespace {

std::vector<std::string> scan_names(Server& server, std::string_view prefix, std::string_view pattern) {
  const std::string match = key_pattern(prefix, pattern);
  std::vector<std::string> names;
  std::set<std::string> seen;
  std::string cursor = "0";
  do {
    ReplyPtr r = server.command({"SCAN", cursor, "MATCH", match, "COUNT", "1000"});
    cursor = std::string(reply_string(reply_at(*r, 0)));
    const auto& keys = reply_at(*r, 1);
    for (std::size_t i = 0; i < reply_size(keys); ++i) {
      std::string name = name_of_record_key(reply_string(reply_at(keys, i)), prefix);
      if (!name.empty() && seen.insert(name).second) names.push_back(std::move(name));
    }
  } while (cursor != "0");
  return names;
}

// The server's clock in ms, from a TIME reply.
long long server_ms(const redisReply& time) {
  return reply_integer(reply_at(time, 0)) * 1000 + reply_integer(reply_at(time, 1)) / 1000;
}

// 1 if a live inline holder is kept in o (GET o: it expires with the
// grant), or, on a name an older version keeps, in the record (HGET seq d:
// live at `now_ms`); else 0. Not a holder: a version 1 record (a string:
// WRONGTYPE), an older record's holder whose process died (it stays until
// the name's next call), or a garbage deadline.
std::size_t live_inline_holder(const redisReply& o, const redisReply& deadline, long long now_ms) {
  if (!is_nil(o) && !is_error(o)) return 1;
  if (reply_error(deadline).rfind("WRONGTYPE", 0) == 0 || is_nil(deadline)) return 0;
  if (is_error(deadline)) throw_reply_error(deadline, "list");
  const std::optional<long long> d = reply_integer_if(deadline);  // garbage: no live holder
  return d && *d > now_ms ? 1 : 0;
}

// The name's permit count: the record's `p` while it has a queue structure,
// else the third part of the inline holder `<member> <fence> <permits> <ms>`;
// 0 if neither is readable.
std::uint32_t permits_of(const redisReply& o, const redisReply& record_p) {
  if (const std::optional<long long> p = reply_integer_if(record_p)) return static_cast<std::uint32_t>(*p);
  if (is_nil(o) || is_error(o)) return 0;
  std::istringstream parts{std::string(reply_string(o))};
  std::string member;
  unsigned long long fence = 0;
  std::uint32_t permits = 0;
  return parts >> member >> fence >> permits ? permits : 0;
}

// Holders and waiters of each name: h and q's sizes, plus a live holder kept
// inline; and its permit count.
std::vector<NameSummary> count_names(Server& server, std::string_view prefix, std::vector<std::string> names) {
  std::vector<Keys> keys;  // Argv refers to these strings
  keys.reserve(names.size());
  for (const auto& name : names) keys.emplace_back(prefix, name);
  std::vector<Argv> counts = {{"TIME"}};
  for (const auto& k : keys) {
    counts.push_back({"ZCARD", k.h});
    counts.push_back({"ZCARD", k.q});
    counts.push_back({"GET", k.o});
    counts.push_back({"HGET", k.seq, "d"});
    counts.push_back({"HGET", k.seq, "p"});
  }
  auto replies = server.pipeline(counts);
  const long long now_ms = server_ms(*replies[0]);
  std::vector<NameSummary> out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::size_t at = 1 + 5 * i;
    NameSummary n{std::move(names[i]), static_cast<std::size_t>(reply_integer(*replies[at])),
                  static_cast<std::size_t>(reply_integer(*replies[at + 1]))};
    n.holders += live_inline_holder(*replies[at + 2], *replies[at + 3], now_ms);
    n.permits = permits_of(*replies[at + 2], *replies[at + 4]);
    if (n.holders + n.waiters > 0) out.push_back(std::move(n));
  }
  return out;
}

}  // namespace

std::vector<NameSummary> list(Server& server, std::string_view prefix, std::string_view pattern) {
  std::vector<std::string> names = scan_names(server, prefix, pattern);
  std::vector<NameSummary> out;
  constexpr std::size_t batch = 1000;  // names counted per pipeline
  for (std::size_t i = 0; i < names.size(); i += batch) {
    std::vector<std::string> some(names.begin() + static_cast<std::ptrdiff_t>(i),
                                  names.begin() + static_cast<std::ptrdiff_t>(std::min(names.size(), i + batch)));
    for (auto& n : count_names(server, prefix, std::move(some))) out.push_back(std::move(n));
  }
  return out;
}

}  // namespace fairlock::detail
