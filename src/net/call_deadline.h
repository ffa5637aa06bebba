#pragma once
// The deadline of the Redis calls this thread makes now. A wait with a
// deadline sets it around its calls, and the connection layer (Pool,
// Connection) bounds each connect, write and read by it as well as by its
// own timeouts, so a stalled or unreachable server never holds a caller past
// the deadline it asked for. Without one, the timeouts of Options alone apply.
//
// A deadline may also move nearer while the calls are under way
// (MovableDeadline): a wait cancelled from another thread, or a wait with an
// earlier deadline that begins while the async thread is in a round of
// calls. The socket a call is blocked on is then shut down at the new
// deadline (DeadlineKeeper), since a blocked read cannot be told its
// timeout changed.
#include <chrono>
#include <mutex>
#include <optional>

namespace fairlock::detail {

class MovableDeadline;

class CallDeadline {
 public:
  using Time = std::chrono::steady_clock::time_point;
  // Bounds this thread's calls by `until` for the scope (nullopt: no bound
  // beyond an outer one); an outer, earlier deadline stays in force.
  explicit CallDeadline(std::optional<Time> until);
  // Bounds this thread's calls by `movable` for the scope, as it moves (it
  // replaces an outer movable deadline; an outer fixed one stays in force).
  explicit CallDeadline(MovableDeadline& movable);
  ~CallDeadline();
  CallDeadline(const CallDeadline&) = delete;
  CallDeadline& operator=(const CallDeadline&) = delete;

  // The time a call may wait now: `cap`, or less if this thread's deadline
  // is nearer; zero once it has passed.
  static std::chrono::milliseconds bound(std::chrono::milliseconds cap);
  // A deadline is set and nearer than `cap`.
  static bool binds(std::chrono::milliseconds cap);
  // This thread's deadline has passed (a call that failed then was cut).
  static bool passed();
  // This thread's deadline may move nearer (MovableDeadline) during a wait.
  static bool may_move();

  // One blocking read or write on socket `fd`, for its scope: a movable
  // deadline of this thread may cut it short. Returns, like bound(), how
  // long it may wait.
  class Io {
   public:
    explicit Io(int fd);
    ~Io();
    Io(const Io&) = delete;
    Io& operator=(const Io&) = delete;
    std::chrono::milliseconds bound(std::chrono::milliseconds cap) const;

   private:
    MovableDeadline* movable_;
    std::optional<Time> movable_until_;
  };

 private:
  std::optional<Time> saved_;
  MovableDeadline* saved_movable_;
};

// A deadline its owner sets for a series of calls (begin, end) and another
// thread may bring nearer (lower) while they run.
class MovableDeadline {
 public:
  using Time = CallDeadline::Time;
  // The owner, before its calls (nullopt: the timeouts of Options alone
  // bound them, until lowered) and after them.
  void begin(std::optional<Time> until);
  void end();
  // The owner's calls after begin(), for the scope: bounded by this
  // deadline as it moves, and ended (end()) however the scope closes.
  class Calls {
   public:
    explicit Calls(MovableDeadline& d) : deadline_(d), bound_(d) {}
    ~Calls() { deadline_.end(); }
    Calls(const Calls&) = delete;
    Calls& operator=(const Calls&) = delete;

   private:
    MovableDeadline& deadline_;
    CallDeadline bound_;
  };
  // Any thread: true if calls in progress now end sooner, at `at` (then the
  // caller has a DeadlineKeeper cut them there); false between end and begin.
  bool lower(Time at);
  // The keeper, at a time lower() returned: shuts down the socket a call
  // is blocked on if the deadline in force has passed.
  void cut_if_due();

 private:
  friend class CallDeadline;
  std::optional<Time> enter(int fd);  // a blocking call begins on `fd`
  void leave();
  std::mutex mu_;
  bool active_ = false;  // between begin and end
  std::optional<Time> until_;
  int fd_ = -1;  // open while set: it is unset before the call returns
};

}  // namespace fairlock::detail
