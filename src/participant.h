#pragma once
// One claim on one name: the C++ half of the queue logic, shared by
// FairLock and FairSemaphore. It never decides who is next; it runs the
// scripts, sleeps until signalled or a bounded timer, and reacts to what the
// client's subscriber and heartbeat report.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "fairlock/options.h"
#include "scripts.h"

namespace fairlock::detail {

class ClientImpl;
using SteadyTime = std::chrono::steady_clock::time_point;

class Participant : public std::enable_shared_from_this<Participant> {
 public:
  Participant(std::shared_ptr<ClientImpl> client, std::string name, std::uint32_t permits, LockOptions opts);

  // deadline: nullopt waits until granted or cancelled. queue=false never
  // queues (try_lock). Returns true when granted.
  bool acquire(std::optional<SteadyTime> deadline, bool queue);
  void release();
  void cancel() noexcept;
  void abandon() noexcept;  // destructor: release or leave, never throws
  bool owns() const noexcept;
  std::uint64_t fence() const noexcept;
  const std::string& name() const noexcept { return name_; }
  std::uint32_t permits() const noexcept { return permits_; }
  const Keys& keys() const noexcept { return keys_; }

  // --- called by the client's threads ---
  struct Beat {
    std::string member;
    long long lease_ms;
    bool holder;  // collected while holding (not while waiting)
  };
  // What the next heartbeat should send for this participant, if anything.
  // Also notices a grant whose lease ran out locally (lost).
  std::optional<Beat> beat_item(SteadyTime now);
  void on_beat(const Beat& beat, long long status, long long value, SteadyTime sent_at);
  // The heartbeat call covering this member failed (kept for the loss reason).
  void on_beat_error(const Beat& beat, const std::string& error);
  // PUBLISH wake: `member` was granted with `fence`. True if it woke a wait
  // (counted in wakes_signal).
  bool on_signal(const std::string& member, std::uint64_t fence);
  // Re-run acquire now (keyspace event, subscriber state change). True if
  // a wait was woken.
  bool kick();
  // The ticket of a wait in progress (keyspace wake order).
  std::optional<std::uint64_t> waiting_ticket() const;
  // Client shutdown: a wait is cancelled; a held grant's member is returned
  // for release and the grant is marked lost.
  std::optional<std::string> on_shutdown();

 private:
  enum class State { idle, waiting, held, lost };
  struct Reply;
  Reply call_acquire(const std::string& member, bool queue, SteadyTime& sent_at);
  bool finish_granted(std::unique_lock<std::mutex>& lk, std::uint64_t fence, SteadyTime valid_until);
  void leave_queue(const std::string& member, bool cancelled);
  void mark_lost(std::unique_lock<std::mutex>& lk, const std::string& why);
  void report_position(long long position);  // calls on_position; never under mu_
  std::chrono::steady_clock::duration poll_interval() const;

  std::shared_ptr<ClientImpl> client_;
  std::string name_;
  std::uint32_t permits_;
  LockOptions opts_;
  Keys keys_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  State state_ = State::idle;
  std::string member_;
  std::uint64_t fence_ = 0;
  std::uint64_t ticket_ = 0;
  long long position_ = -1;
  long long next_expiry_ms_ = -1;
  bool signalled_ = false;
  std::uint64_t signal_fence_ = 0;
  bool kicked_ = false;
  bool cancelled_ = false;
  bool lease_confirmed_ = false;
  SteadyTime refreshed_at_{};
  SteadyTime valid_until_{};
  std::string lost_reason_;
  std::string beat_error_;  // the last heartbeat failure, until one succeeds
};

}  // namespace fairlock::detail
