#include "protocol/protocol.h"

#include <sys/random.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <set>
#include <stdexcept>

#include "fairlock/errors.h"
#include "fairlock_lua.h"
#include "node/server.h"

namespace fairlock::detail {

using std::chrono::milliseconds;

namespace {
// The longest lease or liveness a script takes, and the largest ms figure
// in a reply (lua/lib.lua MAX_MS).
constexpr long long kMaxMs = 2147483647;
}  // namespace

// ---------------------------------------------------------------- scripts

namespace {

const lua::EmbeddedScript& embedded(Script s) {
  // kScripts follows the lua/ directory; the enum must name each of them.
  static const auto table = [] {
    std::vector<const lua::EmbeddedScript*> t;
    for (Script s : kAllScripts) {
      const lua::EmbeddedScript* found = nullptr;
      for (const auto& e : lua::kScripts) {
        if (e.name == script_name(s)) found = &e;
      }
      if (!found) throw std::logic_error("fairlock: no lua script for " + std::string(script_name(s)));
      t.push_back(found);
    }
    return t;
  }();
  return *table[static_cast<std::size_t>(s)];
}

}  // namespace

std::string_view script_name(Script s) {
  switch (s) {
    case Script::acquire: return "acquire";
    case Script::release: return "release";
    case Script::cancel: return "cancel";
    case Script::heartbeat: return "heartbeat";
    case Script::inspect: return "inspect";
    case Script::evict: return "evict";
  }
  return "?";
}

std::string_view script_source(Script s) { return embedded(s).source; }

std::string_view script_sha(Script s) { return embedded(s).sha; }

std::string_view script_function(Script s) { return embedded(s).function; }

std::string_view library_source() { return lua::library_source; }

// ---------------------------------------------------------------- formats

Keys::Keys(std::string_view prefix, std::string_view name) {
  if (name.empty()) throw std::invalid_argument("name: must not be empty");
  if (name.size() > kMaxNameBytes) {
    throw std::invalid_argument("name: longer than " + std::to_string(kMaxNameBytes) + " bytes");
  }
  if (name.find_first_of("{}") != std::string_view::npos) {
    throw std::invalid_argument("name: must not contain '{' or '}' (they would break the hash tag)");
  }
  std::string base;
  base.reserve(prefix.size() + name.size() + 8);
  base.append(prefix).append(":{").append(name).append("}:");
  q = base + "q";
  w = base + "w";
  h = base + "h";
  g = base + "g";
  seq = base + "seq";
  o = base + "o";
}

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

std::string new_member(Notify mode, std::string_view client_id, milliseconds lease) {
  char letter = mode == Notify::publish ? 'p' : mode == Notify::keyspace ? 'k' : 'n';
  std::string m(1, letter);
  m.append(client_id).append(":").append(random_hex(kTokenBytes)).append(":").append(std::to_string(lease.count()));
  return m;
}

std::string wake_channel(std::string_view prefix, std::string_view client_id) {
  return std::string(prefix).append(":wake:").append(client_id);
}

std::string keyspace_channel(int db, std::string_view prefix, std::string_view name, std::string_view client_id) {
  return "__keyspace@" + std::to_string(db) + "__:" + std::string(prefix) + ":{" + std::string(name) +
         "}:wake:" + std::string(client_id);
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

// ---------------------------------------------------------------- typed calls

namespace {

std::string str(long long v) { return std::to_string(v); }

// Fences and tickets are integers in [1, 2^53) (see lua/lib.lua); anything
// else in a reply comes from tampered keys and must not reach the caller.
std::uint64_t checked_fence(long long v, const char* what) {
  if (v < 1 || v >= kMaxFence) {
    throw ServerError(std::string("fairlock: redis returned an invalid ") + what + " " + std::to_string(v) +
                      " (the name's keys were modified outside fairlock)");
  }
  return static_cast<std::uint64_t>(v);
}

// An ms figure of a reply in [lo, 2^31-1]; anything else is not from the
// scripts and must not reach the caller.
long long checked_ms(long long v, long long lo, const char* what) {
  if (v < lo || v > kMaxMs) {
    throw ServerError(std::string("fairlock: redis returned an invalid ") + what + " " + std::to_string(v));
  }
  return v;
}

// A granted reply's remaining ms (at least 1).
long long checked_remaining(const redisReply& v) { return checked_ms(reply_integer(v), 1, "remaining_ms"); }

const char* acquire_mode(const AcquireArgs& a) {
  if (!a.queue) return "t";
  return a.first ? "f" : "q";
}

}  // namespace

ScriptCall acquire_call(const Keys& keys, const AcquireArgs& a) {
  return ScriptCall{
      Script::acquire,
      &keys,
      {std::string(a.member), str(a.permits), str(a.lease.count()), str(a.liveness.count()), acquire_mode(a)}};
}

Acquired parse_acquired(const redisReply& r) {
  if (is_error(r)) throw_reply_error(r, "fairlock acquire");
  Acquired out;
  const long long status = reply_integer(reply_at(r, 0));
  if (status == 1) {
    out.status = Acquired::Status::granted;
    out.fence = checked_fence(reply_integer(reply_at(r, 1)), "fence");
    out.remaining_ms = checked_remaining(reply_at(r, 2));
  } else if (status == 0) {
    out.status = Acquired::Status::queued;
    out.ticket = checked_fence(reply_integer(reply_at(r, 1)), "ticket");
    out.position = reply_integer(reply_at(r, 2));
    out.next_expiry_ms = reply_integer(reply_at(r, 3));
  } else if (status != -1) {
    throw ServerError("fairlock acquire: unexpected status " + std::to_string(status));
  }
  return out;
}

Acquired acquire(Server& server, const Keys& keys, const AcquireArgs& a) {
  return parse_acquired(*server.run_one(acquire_call(keys, a)));
}

bool release(Server& server, const Keys& keys, std::string_view member, std::uint32_t permits, bool queued_first) {
  return parse_released(*server.run_one(release_call(keys, member, permits, queued_first)));
}

ScriptCall release_call(const Keys& keys, std::string_view member, std::uint32_t permits, bool queued_first) {
  ScriptCall call{Script::release, &keys, {std::string(member), str(permits)}};
  if (queued_first) call.args.emplace_back("h");
  return call;
}

bool parse_released(const redisReply& r) {
  if (is_error(r)) throw_reply_error(r, "fairlock release");
  return reply_integer(r) == 1;
}

void release_all(Server& server, const std::vector<ReleaseCall>& calls) {
  std::vector<ScriptCall> batch;
  batch.reserve(calls.size());
  for (const auto& c : calls) batch.push_back(ScriptCall{Script::release, c.keys, {c.member, str(c.permits)}});
  server.run_batch(batch, Lane::commands);
}

ScriptCall cancel_call(const Keys& keys, std::string_view member, std::uint32_t permits) {
  return ScriptCall{Script::cancel, &keys, {std::string(member), str(permits)}};
}

CancelResult parse_cancelled(const redisReply& r) {
  if (is_error(r)) throw_reply_error(r, "fairlock cancel");
  CancelResult out;
  switch (reply_integer(reply_at(r, 0))) {
    case 1: out.status = CancelResult::Status::left; break;
    case 2:
      out.status = CancelResult::Status::granted;
      out.fence = checked_fence(reply_integer(reply_at(r, 1)), "fence");
      out.remaining_ms = checked_remaining(reply_at(r, 2));
      break;
    default: break;
  }
  return out;
}

CancelResult cancel(Server& server, const Keys& keys, std::string_view member, std::uint32_t permits) {
  return parse_cancelled(*server.run_one(cancel_call(keys, member, permits)));
}

namespace {

// Entry j of a heartbeat reply: three integers (status, value, ms).
BeatResult parse_beat(const redisReply& r, std::size_t j) {
  const long long status = reply_integer(reply_at(r, 3 * j));
  const redisReply& value = reply_at(r, 3 * j + 1);
  const redisReply& ms = reply_at(r, 3 * j + 2);
  switch (status) {
    case 1:
      return BeatResult{BeatResult::Status::waiting, reply_integer(value),
                        checked_ms(reply_integer(ms), -1, "next_ms")};
    case 2:
      return BeatResult{BeatResult::Status::holding,
                        static_cast<long long>(checked_fence(reply_integer(value), "fence")), checked_remaining(ms)};
    case 0: return BeatResult{BeatResult::Status::gone, 0, -1};
    default: throw ServerError("fairlock heartbeat: unexpected status " + std::to_string(status));
  }
}

}  // namespace

std::vector<BeatReply> heartbeat(Server& server, milliseconds liveness, const std::vector<BeatName>& names) {
  std::vector<ScriptCall> calls;
  calls.reserve(names.size());
  for (const auto& n : names) {
    ScriptCall call{Script::heartbeat, n.keys, {str(n.permits), str(liveness.count())}};
    for (const auto& e : n.entries) {
      call.args.push_back(e.member);
      call.args.push_back(str(e.lease.count()));
    }
    calls.push_back(std::move(call));
  }
  std::vector<ReplyPtr> replies = server.run_batch(calls, Lane::heartbeat);
  std::vector<BeatReply> out(names.size());
  for (std::size_t i = 0; i < names.size(); ++i) {
    const redisReply& r = *replies[i];
    if (is_error(r)) {
      out[i].error = std::string(reply_error(r));
      continue;
    }
    for (std::size_t j = 0; j < names[i].entries.size(); ++j) out[i].results.push_back(parse_beat(r, j));
  }
  return out;
}

QueueState inspect(Server& server, const Keys& keys, std::string name, std::size_t max_waiters) {
  const std::size_t limit = std::min<std::size_t>(max_waiters, 100000);
  ReplyPtr r = server.run(Script::inspect, keys, {std::to_string(limit)});
  QueueState st;
  st.name = std::move(name);
  st.server_time_ms = reply_integer(reply_at(*r, 0));
  st.permits = static_cast<std::uint32_t>(reply_integer(reply_at(*r, 1)));
  st.last_fence = static_cast<std::uint64_t>(reply_integer(reply_at(*r, 2)));
  st.holder_count = static_cast<std::size_t>(reply_integer(reply_at(*r, 3)));
  st.waiter_count = static_cast<std::size_t>(reply_integer(reply_at(*r, 4)));
  auto u64 = [](const redisReply& v) { return static_cast<std::uint64_t>(reply_integer(v)); };
  auto ms = [](const redisReply& v) { return milliseconds(reply_integer(v)); };
  const auto& h = reply_at(*r, 5);
  for (std::size_t i = 0; i + 3 < reply_size(h); i += 4) {
    st.holders.push_back(HolderInfo{std::string(reply_string(reply_at(h, i))), u64(reply_at(h, i + 1)),
                                    ms(reply_at(h, i + 2)), ms(reply_at(h, i + 3))});
  }
  const auto& w = reply_at(*r, 6);
  for (std::size_t i = 0; i + 3 < reply_size(w); i += 4) {
    st.waiters.push_back(WaiterInfo{std::string(reply_string(reply_at(w, i))), i / 4, u64(reply_at(w, i + 1)),
                                    ms(reply_at(w, i + 2)), ms(reply_at(w, i + 3))});
  }
  return st;
}

Evicted evict(Server& server, const Keys& keys, std::string_view member) {
  // permits "1": used only if the name lost its stored count (evict then fills as stored).
  ReplyPtr r = server.run(Script::evict, keys, {std::string(member), "1"});
  switch (reply_integer(*r)) {
    case 1: return Evicted::holder;
    case 2: return Evicted::waiter;
    default: return Evicted::none;
  }
}

namespace {

// "<prefix>:{<pattern>}:*" with the prefix's glob characters escaped.
std::string key_pattern(std::string_view prefix, std::string_view pattern) {
  std::string match;
  for (char c : prefix) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') match.push_back('\\');
    match.push_back(c);
  }
  return match.append(":{").append(pattern).append("}:*");
}

// The name of a key "<prefix>:{<name>}:<suffix>" whose suffix is g (a busy
// name) or seq (its record, beside any holder kept inline); "" otherwise.
std::string name_of_record_key(std::string_view key, std::string_view prefix) {
  const std::string head = std::string(prefix) + ":{";
  if (key.substr(0, head.size()) != head) return "";
  for (std::string_view tail : {"}:g", "}:seq"}) {
    if (key.size() >= head.size() + tail.size() && key.substr(key.size() - tail.size()) == tail) {
      return std::string(key.substr(head.size(), key.size() - head.size() - tail.size()));
    }
  }
  return "";
}

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

// 1 if a live inline holder is kept in o (EXISTS o: it expires with the
// grant), or, on a name an older version keeps, in the record (HGET seq d:
// live at `now_ms`); else 0. Not a holder: a version 1 record (a string:
// WRONGTYPE), an older record's holder whose process died (it stays until
// the name's next call), or a garbage deadline.
std::size_t live_inline_holder(const redisReply& o_exists, const redisReply& deadline, long long now_ms) {
  if (reply_integer(o_exists) > 0) return 1;
  if (reply_error(deadline).rfind("WRONGTYPE", 0) == 0 || is_nil(deadline)) return 0;
  if (is_error(deadline)) throw_reply_error(deadline, "list");
  const std::optional<long long> d = reply_integer_if(deadline);  // garbage: no live holder
  return d && *d > now_ms ? 1 : 0;
}

// Holders and waiters of each name: h and q's sizes, plus a live holder kept
// inline.
std::vector<NameSummary> count_names(Server& server, std::string_view prefix, std::vector<std::string> names) {
  std::vector<Keys> keys;  // Argv refers to these strings
  keys.reserve(names.size());
  for (const auto& name : names) keys.emplace_back(prefix, name);
  std::vector<Argv> counts = {{"TIME"}};
  for (const auto& k : keys) {
    counts.push_back({"ZCARD", k.h});
    counts.push_back({"ZCARD", k.q});
    counts.push_back({"EXISTS", k.o});
    counts.push_back({"HGET", k.seq, "d"});
  }
  auto replies = server.pipeline(counts);
  const long long now_ms = server_ms(*replies[0]);
  std::vector<NameSummary> out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::size_t at = 1 + 4 * i;
    NameSummary n{std::move(names[i]), static_cast<std::size_t>(reply_integer(*replies[at])),
                  static_cast<std::size_t>(reply_integer(*replies[at + 1]))};
    n.holders += live_inline_holder(*replies[at + 2], *replies[at + 3], now_ms);
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
