#include "call_deadline.h"

#include <algorithm>

namespace fairlock::detail {

namespace {
thread_local std::optional<CallDeadline::Time> t_until;
}

CallDeadline::CallDeadline(std::optional<Time> until) : saved_(t_until) {
  if (until && (!t_until || *until < *t_until)) t_until = until;
}

CallDeadline::~CallDeadline() { t_until = saved_; }

std::chrono::milliseconds CallDeadline::bound(std::chrono::milliseconds cap) {
  if (!t_until) return cap;
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(*t_until - std::chrono::steady_clock::now());
  return std::clamp(left, std::chrono::milliseconds(0), cap);
}

bool CallDeadline::binds(std::chrono::milliseconds cap) { return bound(cap) < cap; }

}  // namespace fairlock::detail
