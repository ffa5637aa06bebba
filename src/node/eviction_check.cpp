#include "node/eviction_check.h"

#include <spdlog/spdlog.h>

#include <charconv>

#include "fairlock/errors.h"

namespace fairlock::detail {

namespace {

std::optional<unsigned long long> to_bytes(std::string_view s) {
  unsigned long long v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<MemoryPolicy> policy_of(std::optional<std::string_view> policy, std::optional<std::string_view> bytes) {
  if (!policy || policy->empty() || !bytes) return std::nullopt;
  const auto maxmemory = to_bytes(*bytes);
  if (!maxmemory) return std::nullopt;
  return MemoryPolicy{std::string(*policy), *maxmemory};
}

// The value of "field:value" on a line of INFO's text.
std::optional<std::string_view> info_field(std::string_view info, std::string_view field) {
  for (std::size_t at = 0; at < info.size();) {
    std::size_t end = info.find('\n', at);
    if (end == std::string_view::npos) end = info.size();
    std::string_view line = info.substr(at, end - at);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.size() > field.size() && line.substr(0, field.size()) == field && line[field.size()] == ':') {
      return line.substr(field.size() + 1);
    }
    at = end + 1;
  }
  return std::nullopt;
}

std::string text_of(const MemoryPolicy& p) {
  return "maxmemory-policy " + p.policy + " with maxmemory " + std::to_string(p.maxmemory);
}

}  // namespace

std::optional<MemoryPolicy> policy_from_info(std::string_view info) {
  return policy_of(info_field(info, "maxmemory_policy"), info_field(info, "maxmemory"));
}

std::optional<MemoryPolicy> policy_from_config(const redisReply& r) {
  if (!is_array(r)) return std::nullopt;
  std::optional<std::string_view> policy, bytes;
  for (std::size_t i = 0; i + 1 < reply_size(r); i += 2) {
    const std::string_view name = reply_string(reply_at(r, i));
    if (name == "maxmemory-policy") policy = reply_string(reply_at(r, i + 1));
    if (name == "maxmemory") bytes = reply_string(reply_at(r, i + 1));
  }
  return policy_of(policy, bytes);
}

EvictionCheck::EvictionCheck(std::string where, bool allow, spdlog::logger& log)
    : where_(std::move(where)), allow_(allow), log_(log) {}

void EvictionCheck::check(Connection& c) {
  std::string why_not;
  const std::optional<MemoryPolicy> p = read(c, why_not);
  if (!p) {
    note(false, "fairlock: could not check the maxmemory-policy of " + where_ + " (" + why_not +
                    "): unless it is noeviction, Redis may evict a grant and give it to a second holder");
    return;
  }
  if (p->policy == "noeviction") {
    note(false, "");
    return;
  }
  if (p->maxmemory == 0) {
    note(false, "fairlock: " + where_ + " has " + text_of(*p) +
                    " (no limit): as soon as maxmemory is set, Redis may evict a grant and give it to a second "
                    "holder; set maxmemory-policy noeviction");
    return;
  }
  const std::string what = where_ + " has " + text_of(*p) +
                           ": Redis may evict a grant (or a queue) and give it to a second holder. Fix: CONFIG SET "
                           "maxmemory-policy noeviction (and in redis.conf)";
  if (!allow_) throw EvictionPolicyError("redis: " + what + ", or set Options::allow_evicting_server to go on anyway");
  note(true, "fairlock: " + what + "; going on: Options::allow_evicting_server is set");
}

// INFO memory, else CONFIG GET (INFO may be refused or renamed where
// CONFIG is not, and the other way round); error replies are reasons.
std::optional<MemoryPolicy> EvictionCheck::read(Connection& c, std::string& why_not) {
  ReplyPtr info = c.command({"INFO", "memory"});
  if (reply_error(*info).substr(0, 6) == "NOAUTH") throw_reply_error(*info, "INFO");  // AccessDenied: no password
  if (!is_error(*info)) {
    if (auto p = policy_from_info(reply_string(*info))) return p;
    why_not = "INFO memory has no maxmemory_policy";
  } else {
    why_not = "INFO: " + std::string(reply_error(*info));
  }
  ReplyPtr config = c.command({"CONFIG", "GET", "maxmemory*"});
  if (!is_error(*config)) {
    if (auto p = policy_from_config(*config)) return p;
    why_not += "; CONFIG GET: no maxmemory-policy";
  } else {
    why_not += "; CONFIG GET: " + std::string(reply_error(*config));
  }
  return std::nullopt;
}

// Logs `message` unless it was the last one logged (an empty one logs
// nothing and forgets the last: the finding changed back).
void EvictionCheck::note(bool error, const std::string& message) {
  std::lock_guard<std::mutex> lk(mu_);
  if (message == noted_) return;
  noted_ = message;
  if (message.empty()) return;
  if (error) {
    log_.error("{}", message);
  } else {
    log_.warn("{}", message);
  }
}

}  // namespace fairlock::detail
