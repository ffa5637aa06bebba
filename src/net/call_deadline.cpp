#include "net/call_deadline.h"

#include <sys/socket.h>

#include <algorithm>

namespace fairlock::detail {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

namespace {

thread_local std::optional<CallDeadline::Time> t_until;
thread_local MovableDeadline* t_movable = nullptr;

std::optional<CallDeadline::Time> nearer(std::optional<CallDeadline::Time> a, std::optional<CallDeadline::Time> b) {
  if (!a) return b;
  if (!b) return a;
  return std::min(*a, *b);
}

milliseconds left_until(std::optional<CallDeadline::Time> until, milliseconds cap) {
  if (!until) return cap;
  const auto left = std::chrono::ceil<milliseconds>(*until - steady_clock::now());
  return std::clamp(left, milliseconds(0), cap);
}

}  // namespace

CallDeadline::CallDeadline(std::optional<Time> until) : saved_(t_until), saved_movable_(t_movable) {
  t_until = nearer(t_until, until);
}

CallDeadline::CallDeadline(MovableDeadline& movable) : saved_(t_until), saved_movable_(t_movable) {
  t_movable = &movable;
}

CallDeadline::~CallDeadline() {
  t_until = saved_;
  t_movable = saved_movable_;
}

milliseconds CallDeadline::bound(milliseconds cap) {
  std::optional<Time> movable;
  if (t_movable != nullptr) {
    std::lock_guard<std::mutex> lk(t_movable->mu_);
    movable = t_movable->until_;
  }
  return left_until(nearer(t_until, movable), cap);
}

bool CallDeadline::binds(milliseconds cap) { return bound(cap) < cap; }

bool CallDeadline::passed() { return bound(milliseconds(1)).count() == 0; }

bool CallDeadline::may_move() { return t_movable != nullptr; }

CallDeadline::Io::Io(int fd) : movable_(t_movable) {
  if (movable_ != nullptr) movable_until_ = movable_->enter(fd);
}

CallDeadline::Io::~Io() {
  if (movable_ != nullptr) movable_->leave();
}

milliseconds CallDeadline::Io::bound(milliseconds cap) const {
  return left_until(nearer(t_until, movable_until_), cap);
}

void MovableDeadline::begin(std::optional<Time> until) {
  std::lock_guard<std::mutex> lk(mu_);
  active_ = true;
  until_ = until;
}

void MovableDeadline::end() {
  std::lock_guard<std::mutex> lk(mu_);
  active_ = false;
  until_.reset();
}

bool MovableDeadline::lower(Time at) {
  std::lock_guard<std::mutex> lk(mu_);
  if (!active_ || (until_ && *until_ <= at)) return false;
  until_ = at;
  return true;
}

void MovableDeadline::cut_if_due() {
  std::lock_guard<std::mutex> lk(mu_);
  if (fd_ < 0 || !until_ || *until_ > steady_clock::now()) return;
  ::shutdown(fd_, SHUT_RDWR);  // the blocked read or write returns now
}

// Registered before the deadline is read: a lower() after this finds the
// socket to cut; one before it is in the deadline returned.
std::optional<MovableDeadline::Time> MovableDeadline::enter(int fd) {
  std::lock_guard<std::mutex> lk(mu_);
  fd_ = fd;
  return until_;
}

void MovableDeadline::leave() {
  std::lock_guard<std::mutex> lk(mu_);
  fd_ = -1;
}

}  // namespace fairlock::detail
