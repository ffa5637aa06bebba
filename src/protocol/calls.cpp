#include "protocol/calls.h"

#include <algorithm>
#include <string>

#include "fairlock/errors.h"
#include "net/reply.h"
#include "protocol/script_errors.h"

namespace fairlock::detail {

using std::chrono::milliseconds;

namespace {
// The longest lease or liveness a script takes, and the largest ms figure
// in a reply (lua/lib.lua MAX_MS).
constexpr long long kMaxMs = 2147483647;

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
  if (is_error(r)) throw_script_error(r, "fairlock acquire");
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
  } else if (status == -2) {
    out.status = Acquired::Status::evicted;
  } else if (status != -1) {
    throw ServerError("fairlock acquire: unexpected status " + std::to_string(status));
  }
  return out;
}

ScriptCall release_call(const Keys& keys, std::string_view member, std::uint32_t permits, bool queued_first) {
  ScriptCall call{Script::release, &keys, {std::string(member), str(permits)}};
  if (queued_first) call.args.emplace_back("h");
  return call;
}

bool parse_released(const redisReply& r) {
  if (is_error(r)) throw_script_error(r, "fairlock release");
  return reply_integer(r) == 1;
}

ScriptCall cancel_call(const Keys& keys, std::string_view member, std::uint32_t permits) {
  return ScriptCall{Script::cancel, &keys, {std::string(member), str(permits)}};
}

CancelResult parse_cancelled(const redisReply& r) {
  if (is_error(r)) throw_script_error(r, "fairlock cancel");
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
    case 3: return BeatResult{BeatResult::Status::evicted, 0, -1};
    default: throw ServerError("fairlock heartbeat: unexpected status " + std::to_string(status));
  }
}

}  // namespace

ScriptCall heartbeat_call(const BeatName& name, milliseconds liveness) {
  ScriptCall call{Script::heartbeat, name.keys, {str(name.permits), str(liveness.count())}};
  if (name.floor > 0) call.args.push_back(std::to_string(name.floor));
  for (const auto& e : name.entries) {
    call.args.push_back(e.member);
    call.args.push_back(str(e.lease.count()));
  }
  return call;
}

BeatReply parse_beats(const redisReply& r, const BeatName& name) {
  BeatReply out;
  if (is_error(r)) {
    out.error = std::string(reply_error(r));
    return out;
  }
  for (std::size_t j = 0; j < name.entries.size(); ++j) out.results.push_back(parse_beat(r, j));
  return out;
}

ScriptCall confirm_call(const Keys& keys, std::uint32_t permits, std::string_view member, milliseconds lease,
                        milliseconds liveness) {
  return ScriptCall{
      Script::heartbeat, &keys, {str(permits), str(liveness.count()), std::string(member), str(lease.count())}};
}

BeatResult parse_confirmed(const redisReply& r) {
  if (is_error(r)) throw_script_error(r, "fairlock heartbeat");
  return parse_beat(r, 0);
}

ScriptCall inspect_call(const Keys& keys, std::size_t max_waiters) {
  const std::size_t limit = std::min<std::size_t>(max_waiters, 100000);
  return ScriptCall{Script::inspect, &keys, {std::to_string(limit)}};
}

QueueState parse_inspected(const redisReply& r, std::string name) {
  if (is_error(r)) throw_script_error(r, "fairlock inspect");
  QueueState st;
  st.name = std::move(name);
  st.server_time_ms = reply_integer(reply_at(r, 0));
  st.permits = static_cast<std::uint32_t>(reply_integer(reply_at(r, 1)));
  st.last_fence = static_cast<std::uint64_t>(reply_integer(reply_at(r, 2)));
  st.holder_count = static_cast<std::size_t>(reply_integer(reply_at(r, 3)));
  st.waiter_count = static_cast<std::size_t>(reply_integer(reply_at(r, 4)));
  auto u64 = [](const redisReply& v) { return static_cast<std::uint64_t>(reply_integer(v)); };
  auto ms = [](const redisReply& v) { return milliseconds(reply_integer(v)); };
  const auto& h = reply_at(r, 5);
  for (std::size_t i = 0; i + 3 < reply_size(h); i += 4) {
    HolderInfo holder;
    holder.token = reply_string(reply_at(h, i));
    holder.fence = u64(reply_at(h, i + 1));
    holder.held = ms(reply_at(h, i + 2));
    holder.lease_left = ms(reply_at(h, i + 3));
    st.holders.push_back(std::move(holder));
  }
  const auto& w = reply_at(r, 6);
  for (std::size_t i = 0; i + 3 < reply_size(w); i += 4) {
    WaiterInfo waiter;
    waiter.token = reply_string(reply_at(w, i));
    waiter.position = i / 4;
    waiter.ticket = u64(reply_at(w, i + 1));
    waiter.waited = ms(reply_at(w, i + 2));
    waiter.liveness_left = ms(reply_at(w, i + 3));
    st.waiters.push_back(std::move(waiter));
  }
  return st;
}

ScriptCall evict_call(const Keys& keys, std::string_view member) {
  // permits "1": used only if the name lost its stored count (evict then fills as stored).
  return ScriptCall{Script::evict, &keys, {std::string(member), "1"}};
}

Evicted parse_evicted(const redisReply& r) {
  if (is_error(r)) throw_script_error(r, "fairlock evict");
  switch (reply_integer(r)) {
    case 1: return Evicted::holder;
    case 2: return Evicted::waiter;
    default: return Evicted::none;
  }
}

}  // namespace fairlock::detail
