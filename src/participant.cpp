#include "participant.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <exception>
#include <stdexcept>
#include <thread>
#include <utility>

#include "client_impl.h"
#include "fairlock/errors.h"

namespace fairlock::detail {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

namespace {
constexpr const char* kShutDown = "the client was shut down";
constexpr std::uint32_t kMaxPermits = 1000000;
constexpr long long kMaxMillis = 2147483647;

// Fences and tickets are integers in [1, 2^53) (see lua/lib.lua); anything
// else in a reply comes from tampered keys and must not reach the caller.
std::uint64_t checked_fence(long long v, const char* what) {
  constexpr long long kMaxFence = 1LL << 53;
  if (v < 1 || v >= kMaxFence) {
    throw ServerError(std::string("fairlock: redis returned an invalid ") + what + " " + std::to_string(v) +
                      " (the name's keys were modified outside fairlock)");
  }
  return static_cast<std::uint64_t>(v);
}
}  // namespace

struct Participant::Reply {
  long long status = 0;     // 1 granted, 0 queued, -1 busy
  std::uint64_t value = 0;  // fence (granted) or ticket (queued)
  long long position = -1;
  long long next_ms = -1;
};

Participant::Participant(std::shared_ptr<ClientImpl> client, std::string name, std::uint32_t permits, LockOptions opts)
    : client_(std::move(client)),
      name_(std::move(name)),
      permits_(permits),
      opts_(std::move(opts)),
      keys_(client_->options().key_prefix, name_) {
  if (permits_ < 1) throw std::invalid_argument("permits: must be at least 1");
  if (permits_ > kMaxPermits) throw std::invalid_argument("permits: at most 1000000");
  if (opts_.lease.count() <= 0) throw std::invalid_argument("lease: must be positive");
  if (opts_.lease.count() > kMaxMillis) throw std::invalid_argument("lease: at most 2147483647 ms");
  client_->check_running();
}

Participant::Reply Participant::call_acquire(const std::string& member, bool queue, SteadyTime& sent_at) {
  sent_at = steady_clock::now();
  ReplyPtr r = client_->run(Script::acquire, keys_,
                            {member, std::to_string(permits_), std::to_string(opts_.lease.count()),
                             std::to_string(client_->options().liveness_ttl.count()), queue ? "q" : "t"});
  Reply out;
  out.status = reply_integer(reply_at(*r, 0));
  if (out.status == 1) {
    out.value = checked_fence(reply_integer(reply_at(*r, 1)), "fence");
  } else if (out.status == 0) {
    out.value = checked_fence(reply_integer(reply_at(*r, 1)), "ticket");
    out.position = reply_integer(reply_at(*r, 2));
    out.next_ms = reply_integer(reply_at(*r, 3));
  } else if (out.status != -1) {
    throw ServerError("fairlock acquire: unexpected status " + std::to_string(out.status));
  }
  return out;
}

bool Participant::finish_granted(std::unique_lock<std::mutex>& lk, std::uint64_t fence, SteadyTime valid_until) {
  state_ = State::held;
  fence_ = fence;
  valid_until_ = valid_until;
  client_->counters.grants.fetch_add(1, std::memory_order_relaxed);
  if (client_->stopped()) {
    lk.unlock();
    abandon();
    throw Cancelled("fairlock: client is shut down");
  }
  return true;
}

void Participant::leave_queue(const std::string& member, bool cancelled) {
  // Best effort: if this fails the entry expires by its liveness deadline.
  try {
    ReplyPtr r = client_->run(Script::cancel, keys_, {member, std::to_string(permits_)});
    if (reply_integer(reply_at(*r, 0)) == 2 && cancelled) {
      client_->run(Script::release, keys_, {member, std::to_string(permits_)});
    }
  } catch (const std::exception& e) {
    client_->log().warn("fairlock: could not leave the queue of {}: {}", name_, e.what());
  }
}

std::chrono::steady_clock::duration Participant::poll_interval() const {
  // Position-aware: the head polls every 10 ms, place k behind it every
  // 10 * (k + 1) ms, never slower than the heartbeat (which also reports
  // grants). Linear, not exponential: a waiter's position is only as fresh
  // as its last poll, and the queue moves one place per grant, so a waiter
  // must not sleep through many grants before it learns it is next. The
  // total rate over a queue of n grows only as log(n) (a harmonic sum) up
  // to the heartbeat cap.
  long long behind = std::max(0LL, position_ - static_cast<long long>(permits_) + 1);
  milliseconds slow = milliseconds(10) * (std::min<long long>(behind, 100000) + 1);
  return std::min<steady_clock::duration>(slow, client_->heartbeat_period());
}

bool Participant::acquire(std::optional<SteadyTime> deadline, bool queue) {
  client_->check_running();
  // Keep ourselves alive for the whole wait: the owning object may be
  // destroyed or moved from another thread, which cancels this wait.
  const auto self = shared_from_this();
  std::string member, stale;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (state_ == State::held) throw std::logic_error("fairlock: " + name_ + " is already held by this object");
    if (state_ == State::waiting)
      throw std::logic_error("fairlock: " + name_ + " is already waiting in another thread");
    if (state_ == State::lost) stale = member_;  // known lost, but it may linger in Redis
    member_ = client_->new_member();
    member = member_;
    state_ = State::waiting;
    ticket_ = 0;
    position_ = -1;
    next_expiry_ms_ = -1;
    signalled_ = kicked_ = cancelled_ = lease_confirmed_ = false;
    lost_reason_.clear();
    beat_error_.clear();
  }
  if (!stale.empty()) {
    client_->delist(stale);
    try {
      client_->run(Script::release, keys_, {stale, std::to_string(permits_)});
    } catch (const std::exception& e) {
      client_->log().debug("fairlock: release of a lost grant of {} failed: {}", name_, e.what());
    }
  }
  client_->enlist(member, self, opts_.lease);
  const bool watched = queue && client_->mode() == Notify::keyspace && client_->watch(name_);
  struct Unwatch {
    ClientImpl* c;
    const std::string* name;
    bool on;
    Unwatch(ClientImpl* client, const std::string* n, bool watching) : c(client), name(n), on(watching) {}
    Unwatch(const Unwatch&) = delete;
    Unwatch& operator=(const Unwatch&) = delete;
    ~Unwatch() {
      if (on) c->unwatch(*name);
    }
  } unwatch{client_.get(), &name_, watched};

  // Every way out either holds the grant or has left: `settled` marks that.
  bool settled = false;
  auto give_up = [&](bool leave) {
    settled = true;
    {
      std::lock_guard<std::mutex> lk(mu_);
      state_ = State::idle;
    }
    client_->delist(member);
    if (leave) leave_queue(member, true);
  };
  try {
    SteadyTime sent{};
    // The first reply may be lost after the script ran: the catch below leaves.
    Reply r = call_acquire(member, queue, sent);
    bool fresh = true;  // r holds a reply not yet acted on
    SteadyTime last_ok = sent;
    SteadyTime expiry_at{};
    milliseconds backoff(20);
    const milliseconds liveness = client_->options().liveness_ttl;
    bool counted_wait = false;
    bool retry_now = false;

    for (;;) {
      std::unique_lock<std::mutex> lk(mu_);
      // std::exchange, not `fresh = false;`: clang-analyzer does not follow the
      // retry through the catch below, which reads it false (deadcode.DeadStores).
      if (std::exchange(fresh, false)) {
        if (r.status == 1) {
          lease_confirmed_ = true;
          settled = true;
          return finish_granted(lk, r.value, sent + opts_.lease);
        }
        if (r.status == -1) {
          lk.unlock();
          give_up(false);
          return false;
        }
        if (!counted_wait) {
          counted_wait = true;
          client_->counters.waits.fetch_add(1, std::memory_order_relaxed);
        }
        ticket_ = r.value;
        const bool moved = position_ != r.position;
        position_ = r.position;
        next_expiry_ms_ = r.next_ms;
        expiry_at = sent + milliseconds(std::max(0LL, r.next_ms) + 2);
        refreshed_at_ = std::max(refreshed_at_, sent);
        last_ok = sent;
        if (moved && opts_.on_position) {
          lk.unlock();
          report_position(r.position);
          lk.lock();
        }
      }
      // Sleep until signalled, kicked, cancelled, or a bounded timer.
      bool timer = false;
      for (;;) {
        auto now = steady_clock::now();
        if (signalled_) {
          signalled_ = false;
          const SteadyTime valid = lease_confirmed_ ? valid_until_ : refreshed_at_ + liveness;
          if (signal_fence_ != ticket_) {
            lease_confirmed_ = false;  // a grant of an earlier place we no longer hold: ignore
          } else if (valid <= now) {
            lease_confirmed_ = false;
            kicked_ = true;  // too late to trust it blindly: ask Redis
          } else {
            // The grant was handed to us (PUBLISH or heartbeat): no round trip.
            settled = true;
            return finish_granted(lk, signal_fence_, valid);
          }
        }
        if (cancelled_ || client_->stopped()) {
          lk.unlock();
          client_->counters.cancels.fetch_add(1, std::memory_order_relaxed);
          give_up(true);
          throw Cancelled("fairlock: wait for " + name_ + " cancelled");
        }
        if (deadline && now >= *deadline) {
          lk.unlock();
          ReplyPtr c = client_->run(Script::cancel, keys_, {member, std::to_string(permits_)});
          if (reply_integer(reply_at(*c, 0)) == 2) {
            // Granted by a handoff while we were giving up: keep it.
            auto fence = checked_fence(reply_integer(reply_at(*c, 1)), "fence");
            lk.lock();
            settled = true;
            return finish_granted(lk, fence, refreshed_at_ + liveness);
          }
          give_up(false);
          client_->counters.timeouts.fetch_add(1, std::memory_order_relaxed);
          return false;
        }
        if (kicked_ || timer || retry_now) break;
        SteadyTime next = deadline ? *deadline : now + std::chrono::hours(24);
        const bool signals = client_->signals_ok() &&
                             (client_->mode() == Notify::publish || (client_->mode() == Notify::keyspace && watched));
        next = std::min(next, now + (signals ? steady_clock::duration(liveness) : poll_interval()));
        if (position_ >= 0 && position_ < static_cast<long long>(permits_) && next_expiry_ms_ >= 0) {
          next = std::min(next, std::max(expiry_at, now + milliseconds(1)));  // a lease may run out
        }
        if (cv_.wait_until(lk, next) == std::cv_status::timeout && !signalled_ && !kicked_ && !cancelled_) {
          timer = !(deadline && steady_clock::now() >= *deadline);
        }
      }
      if (timer) client_->counters.wakes_timer.fetch_add(1, std::memory_order_relaxed);
      retry_now = false;
      kicked_ = false;  // before asking: a kick that lands while we ask is kept
      const SteadyTime alive_since = std::max(last_ok, refreshed_at_);
      lk.unlock();
      try {
        r = call_acquire(member, true, sent);
        fresh = true;
        backoff = milliseconds(20);
      } catch (const ServerError&) {
        throw;
      } catch (const Error& e) {
        // Connection trouble: retry (after a backoff) until our entry would
        // have expired anyway, or the deadline passes.
        auto now = steady_clock::now();
        if (now - alive_since > liveness || (deadline && now >= *deadline)) throw;
        client_->log().debug("fairlock: acquire of {} failed, retrying: {}", name_, e.what());
        std::unique_lock<std::mutex> w(mu_);
        cv_.wait_for(w, backoff, [&] { return cancelled_ || client_->stopped(); });
        backoff = std::min(backoff * 2, milliseconds(500));
        retry_now = true;
      }
    }
  } catch (...) {
    if (!settled) give_up(true);  // leave the queue (best effort) whatever went wrong
    throw;
  }
}

void Participant::release() {
  std::string member;
  std::string lost_why;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (state_ == State::idle || state_ == State::waiting) {
      throw NotHeld("fairlock: unlock of " + name_ + ": not held");
    }
    if (state_ == State::lost) lost_why = lost_reason_;
    state_ = State::idle;
    member = member_;
  }
  client_->delist(member);
  // unlock() may run in a std::lock_guard destructor (noexcept): it throws
  // only when allowed and no exception is already unwinding the stack.
  const bool may_throw = opts_.throw_on_lost_unlock && std::uncaught_exceptions() == 0;
  if (lost_why == kShutDown) return;  // Client::shutdown released it already
  long long released = 0;
  try {
    try {
      ReplyPtr r = client_->run(Script::release, keys_, {member, std::to_string(permits_)});
      released = reply_integer(*r);
    } catch (const ConnectionError& e) {
      // Once more on a fresh connection: the server may have closed ours
      // (restart, CLIENT KILL) just now. If the first attempt did run, this
      // one finds nothing to release: that is not a loss.
      client_->log().debug("fairlock: release of {} failed, retrying once: {}", name_, e.what());
      ReplyPtr r = client_->run(Script::release, keys_, {member, std::to_string(permits_)});
      released = std::max(1LL, reply_integer(*r));
    }
  } catch (const Error& e) {
    if (lost_why.empty()) {
      // The grant runs out with its lease; the next waiter gets it then.
      if (may_throw) throw;
      client_->log().warn("fairlock: release of {} failed (it expires with its lease): {}", name_, e.what());
      return;
    }
  }
  if (released == 1 && lost_why.empty()) return;
  if (lost_why.empty()) {
    lost_why = "the grant was gone when unlock ran (lease expired or evicted)";
    client_->counters.lost.fetch_add(1, std::memory_order_relaxed);
  }
  std::string msg = "fairlock: lock " + name_ + " lost: " + lost_why;
  if (may_throw) throw LockLost(msg);
  client_->log().warn("{}", msg);
}

void Participant::cancel() noexcept {
  std::lock_guard<std::mutex> lk(mu_);
  if (state_ == State::waiting) {
    cancelled_ = true;
    cv_.notify_all();
  }
}

void Participant::abandon() noexcept {
  std::string member;
  State was = State::idle;  // set under the lock below
  {
    std::lock_guard<std::mutex> lk(mu_);
    was = state_;
    member = member_;
    if (was == State::waiting) {  // another thread waits: make it leave
      cancelled_ = true;
      cv_.notify_all();
      return;
    }
    state_ = State::idle;
  }
  if (was == State::idle) return;
  client_->delist(member);
  try {
    client_->run(Script::release, keys_, {member, std::to_string(permits_)});
  } catch (const std::exception& e) {
    client_->log().warn("fairlock: release of {} failed (it expires with its lease): {}", name_, e.what());
  }
}

bool Participant::owns() const noexcept {
  std::lock_guard<std::mutex> lk(mu_);
  return state_ == State::held && steady_clock::now() < valid_until_;
}

std::uint64_t Participant::fence() const noexcept {
  std::lock_guard<std::mutex> lk(mu_);
  return fence_;
}

void Participant::report_position(long long position) {
  try {
    opts_.on_position(static_cast<std::size_t>(std::max(0LL, position)));
  } catch (const std::exception& e) {
    client_->log().error("fairlock: on_position callback of {} threw: {}", name_, e.what());
  } catch (...) {
    client_->log().error("fairlock: on_position callback of {} threw", name_);
  }
}

void Participant::mark_lost(std::unique_lock<std::mutex>& lk, const std::string& why) {
  state_ = State::lost;
  lost_reason_ = why;
  client_->counters.lost.fetch_add(1, std::memory_order_relaxed);
  auto callback = opts_.on_lost;
  lk.unlock();
  client_->log().warn("fairlock: lock {} lost: {}", name_, why);
  if (callback) {
    try {
      callback();
    } catch (const std::exception& e) {
      client_->log().error("fairlock: on_lost callback of {} threw: {}", name_, e.what());
    } catch (...) {
      client_->log().error("fairlock: on_lost callback of {} threw", name_);
    }
  }
}

std::optional<Participant::Beat> Participant::beat_item(SteadyTime now) {
  std::unique_lock<std::mutex> lk(mu_);
  if (state_ == State::waiting) return Beat{member_, opts_.lease.count(), false};
  if (state_ != State::held) return std::nullopt;
  if (now >= valid_until_) {
    std::string why = "lease ran out before a renewal succeeded";
    if (!beat_error_.empty()) why += " (last heartbeat error: " + beat_error_ + ")";
    mark_lost(lk, why);
    return std::nullopt;
  }
  if (opts_.auto_renew || !lease_confirmed_) return Beat{member_, opts_.lease.count(), true};
  return std::nullopt;
}

void Participant::on_beat_error(const Beat& beat, const std::string& error) {
  std::lock_guard<std::mutex> lk(mu_);
  if (beat.member == member_) beat_error_ = error;
}

void Participant::on_beat(const Beat& beat, long long status, long long value, SteadyTime sent_at) {
  const std::string& member = beat.member;
  std::unique_lock<std::mutex> lk(mu_);
  if (member != member_) return;
  beat_error_.clear();
  if (state_ == State::waiting) {
    if (status == 1) {
      refreshed_at_ = std::max(refreshed_at_, sent_at);
      if (position_ != value) {
        position_ = value;
        if (opts_.on_position) {
          lk.unlock();
          report_position(value);
          return;
        }
      }
    } else if (status == 2 && !signalled_ && value > 0) {
      signalled_ = true;
      signal_fence_ = static_cast<std::uint64_t>(value);
      lease_confirmed_ = true;
      valid_until_ = sent_at + opts_.lease;
      client_->counters.wakes_heartbeat.fetch_add(1, std::memory_order_relaxed);
    } else if (status == 0) {
      kicked_ = true;  // our entry expired: acquire again (joins at the tail)
    }
    cv_.notify_all();
  } else if (state_ == State::held) {
    if (status == 2 && static_cast<std::uint64_t>(value) == fence_) {
      valid_until_ = std::max(valid_until_, sent_at + opts_.lease);
      lease_confirmed_ = true;
    } else if (beat.holder) {  // a beat sent while we still waited says nothing about the grant
      mark_lost(lk, "the grant is gone from Redis (expired or evicted)");
    }
  }
}

bool Participant::on_signal(const std::string& member, std::uint64_t fence) {
  std::lock_guard<std::mutex> lk(mu_);
  if (member != member_ || state_ != State::waiting || signalled_) return false;
  signalled_ = true;
  signal_fence_ = fence;
  client_->counters.wakes_signal.fetch_add(1, std::memory_order_relaxed);  // before the waiter runs on
  cv_.notify_all();
  return true;
}

bool Participant::kick() {
  std::lock_guard<std::mutex> lk(mu_);
  if (state_ != State::waiting) return false;
  kicked_ = true;
  cv_.notify_all();
  return true;
}

std::optional<std::uint64_t> Participant::waiting_ticket() const {
  std::lock_guard<std::mutex> lk(mu_);
  if (state_ == State::waiting && !kicked_ && !signalled_ && ticket_ != 0) return ticket_;
  return std::nullopt;
}

std::optional<std::string> Participant::on_shutdown() {
  std::lock_guard<std::mutex> lk(mu_);
  if (state_ == State::waiting) {
    cancelled_ = true;
    cv_.notify_all();
  } else if (state_ == State::held) {
    state_ = State::lost;
    lost_reason_ = kShutDown;
    return member_;
  }
  return std::nullopt;
}

}  // namespace fairlock::detail
