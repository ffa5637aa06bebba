#include "node/registration.h"

#include "net/reply.h"

namespace fairlock::detail {

namespace {

std::int64_t ns(Registration::Time t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

}  // namespace

Registration::Registration(std::string key, std::string value, std::chrono::milliseconds expiry)
    : key_(std::move(key)),
      value_(std::move(value)),
      expiry_ms_(std::to_string(expiry.count())),
      refresh_every_(expiry / 3) {}

bool Registration::is_due(Time now) const {
  if (key_.empty() || removed_.load()) return false;
  const std::int64_t at = written_at_ns_.load();
  return at < 0 || ns(now) - at >= std::chrono::nanoseconds(refresh_every_).count();
}

std::optional<Argv> Registration::due(Time now) {
  if (!is_due(now)) return std::nullopt;
  tried_.store(true);
  return Argv{"SET", key_, value_, "PX", expiry_ms_};
}

void Registration::written(const redisReply& reply, Time sent_at) {
  if (!is_error(reply)) written_at_ns_.store(ns(sent_at));
}

void Registration::write(Connection& c) {
  const Time now = std::chrono::steady_clock::now();
  if (auto set = due(now)) written(*c.command(*set), now);
}

std::optional<Argv> Registration::removal() {
  if (removed_.exchange(true) || !tried_.load()) return std::nullopt;
  return Argv{"DEL", key_};
}

}  // namespace fairlock::detail
