#pragma once
// The deadline of the Redis calls this thread makes now. A wait with a
// deadline sets it around its calls, and the connection layer (Pool,
// Connection) bounds each connect, write and read by it as well as by its
// own timeouts, so a stalled or unreachable server never holds a caller past
// the deadline it asked for. Without one, the timeouts of Options alone apply.
#include <chrono>
#include <optional>

namespace fairlock::detail {

class CallDeadline {
 public:
  using Time = std::chrono::steady_clock::time_point;
  // Bounds this thread's calls by `until` for the scope (nullopt: no bound
  // beyond an outer one); an outer, earlier deadline stays in force.
  explicit CallDeadline(std::optional<Time> until);
  ~CallDeadline();
  CallDeadline(const CallDeadline&) = delete;
  CallDeadline& operator=(const CallDeadline&) = delete;

  // The time a call may wait now: `cap`, or less if this thread's deadline
  // is nearer; zero once it has passed.
  static std::chrono::milliseconds bound(std::chrono::milliseconds cap);
  // A deadline is set and nearer than `cap`.
  static bool binds(std::chrono::milliseconds cap);

 private:
  std::optional<Time> saved_;
};

}  // namespace fairlock::detail
