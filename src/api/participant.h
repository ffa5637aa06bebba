#pragma once
// The claim of one FairLock / FairSemaphore object: the Claim state machine
// behind a mutex, shared by the caller's thread and the client's threads
// (session, wake, async), and its two drivers. The blocking one runs it on
// the caller's thread: scripts are called there, and the thread parks only
// while queued. The asynchronous one (participant_async.cpp) runs the same
// steps on the client's async thread, its script calls batched with other
// waiters'. Both settle replies and leave the queue with the same code
// (participant_leave.cpp); what the client's threads tell a claim is in
// participant_events.cpp.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "api/async_driver.h"
#include "core/claim.h"
#include "core/session.h"
#include "fairlock/async.h"
#include "fairlock/errors.h"
#include "fairlock/fair_semaphore.h"
#include "fairlock/options.h"
#include "net/call_deadline.h"
#include "protocol/calls.h"

namespace fairlock::detail {

class ClientImpl;
struct Node;
class Wake;

// The wake subscription a wait holds on its name, where grants are
// signalled per name (keyspace mode, or sharded publish on Redis Cluster):
// on the Wake of the node that owns the name, following the name when that
// changes (its slot moved). A value (the async driver's wait is copied into
// callbacks): whoever ends the wait stops it, once (participant_watch.cpp).
class NameWatch {
 public:
  // Watches `name` on `wake`; true once confirmed (waiting for it, bounded
  // as Wake::watch, unless `wait` is false).
  bool start(Wake& wake, const std::string& name, bool wait, const std::atomic<bool>* give_up = nullptr);
  // The name's node is now `wake`'s: the watch moves there if it was on
  // another (unwatch there, watch here without waiting).
  void follow(Wake& wake, const std::string& name);
  // Grants to `name` are signalled to this process on `wake` now.
  bool confirmed(Wake& wake, const std::string& name) const;
  void stop(const std::string& name) noexcept;

 private:
  Wake* wake_ = nullptr;  // none: not watching
};

class Participant final : public SessionMember, public AsyncWaiter, public std::enable_shared_from_this<Participant> {
 public:
  Participant(std::shared_ptr<ClientImpl> client, std::string name, std::uint32_t permits, LockOptions opts);

  // deadline: nullopt waits until granted or cancelled. queue=false never
  // queues (try_lock). Returns true when granted.
  bool acquire(std::optional<SteadyTime> deadline, bool queue);
  Released release() noexcept;
  void unlock() noexcept;  // release(), with a warning if nothing was held
  void cancel() noexcept;
  void abandon() noexcept;  // destructor: release or leave, never throws
  // The asynchronous driver: returns at once, `done` runs exactly once.
  AcquireHandle acquire_async(std::optional<SteadyTime> deadline, bool queue, AcquireCallback done);
  void cancel_wait(std::uint64_t wait) noexcept;  // AcquireHandle::cancel
  void release_async(std::function<void(Released)> done);
  std::optional<SteadyTime> advance(SteadyTime now, ScriptBatch& batch) override;

  bool owns() const noexcept;
  std::uint64_t fence() const noexcept;
  const std::string& name() const noexcept override { return name_; }
  std::uint32_t permits() const noexcept override { return permits_; }
  const Keys& keys() const noexcept override { return keys_; }

  // SessionMember: called by the client's threads.
  std::optional<Beat> beat_item(SteadyTime now) override;
  void on_beat(const Beat& beat, BeatResult result, SteadyTime sent_at) override;
  void on_beat_error(const Beat& beat, const std::string& error) override;
  bool on_signal(const std::string& member, std::uint64_t fence) override;
  bool kick() override;
  std::optional<std::uint64_t> waiting_ticket() const override;
  std::optional<std::string> on_shutdown() override;

 private:
  bool signalled_per_name(const Wake& wake) const;
  void watch_within(NameWatch& watch, std::optional<SteadyTime> deadline);
  void watch_queued(std::unique_lock<std::mutex>& lk, NameWatch& watch, std::optional<SteadyTime> deadline);
  std::string start_wait(std::optional<SteadyTime> deadline, bool queue);
  // `watch_deadline`: the wait watches its name (per-name signals) from the
  // first time it would sleep queued, within this deadline.
  bool drive(const std::string& member, NameWatch& watch,
             std::optional<std::optional<SteadyTime>> watch_deadline = std::nullopt);
  void ask(std::unique_lock<std::mutex>& lk, const std::string& member, const Step& step);
  AcquireArgs acquire_args(const std::string& member, const Step& step) const;
  void settle_ask(std::unique_lock<std::mutex>& lk, const Acquired& reply, const std::exception_ptr& error,
                  SteadyTime sent, int acks = -1);
  // With Options::sync_replicas (Step::confirm, Step::not_replicated).
  void confirm(std::unique_lock<std::mutex>& lk, const std::string& member, const Step& step);
  ScriptCall confirm_call_of(const std::string& member) const;
  void settle_confirm(std::unique_lock<std::mutex>& lk, const BeatResult& result, int acks,
                      const std::exception_ptr& error, SteadyTime sent);
  NotReplicatedError not_replicated() const;
  template <class Call>
  std::exception_ptr call_unlocked(std::unique_lock<std::mutex>& lk, const Step& step, Call call);
  void notify_waiter();
  void end_soon();
  bool leaves_soon() const;
  void fail_wait(std::unique_lock<std::mutex>& lk, const std::string& member, bool call_server = true) noexcept;
  // `on_failure`, if given, takes over when the calls fail (instead of a warning).
  void settle_leave(const std::string& member, const std::function<CancelResult()>& left,
                    const std::function<void()>& on_failure = {}) noexcept;
  Cancelled wait_cancelled() const;
  EvictedError wait_evicted() const;
  void report_position(std::size_t position) noexcept;
  void report_lost(const std::string& why) noexcept;
  void give_up(std::unique_lock<std::mutex>& lk, const std::string& member);
  void leave_later(const std::string& member) noexcept;
  void left_later(const std::string& member, const redisReply* reply, const std::exception_ptr& error) noexcept;
  void log_abandoned(const std::string& why) noexcept;
  void leave_within(const std::string& member, SteadyTime until) noexcept;
  bool finish_granted(std::unique_lock<std::mutex>& lk);
  WaitContext wait_context(NameWatch& watch) const;
  Released release_member(const ReleasePlan& plan) noexcept;
  void release_quietly(const std::string& member, bool queued_first) noexcept;
  void note_released(const std::string& member, bool queued_first) noexcept;
  void release_later(const std::string& member, bool queued_first, const std::exception& error) noexcept;
  void apply(std::unique_lock<std::mutex>& lk, const Effects& fx);

  Node& node() const;

  // --- the asynchronous driver (participant_async.cpp)
  struct AsyncWait {
    AcquireCallback done;
    std::uint64_t id;
    NameWatch watch;                     // of the name's wake channel (keyspace, sharded)
    std::optional<SteadyTime> deadline;  // tracked (AsyncDriver): the wait's, or its cancel's
  };
  void send_ask(ScriptBatch& batch, const std::string& member, const Step& step, SteadyTime now);
  void send_give_up(ScriptBatch& batch, const std::string& member, SteadyTime sent);
  void leave_async(std::unique_lock<std::mutex>& lk, ScriptBatch& batch, const std::string& member, Step::Kind why,
                   SteadyTime now);
  void send_confirm(ScriptBatch& batch, const std::string& member, const Step& step, SteadyTime now);
  void send_leave(ScriptBatch& batch, const std::string& member, AsyncWait wait, std::exception_ptr outcome);
  void on_ask_reply(const std::string& member, const redisReply* reply, std::exception_ptr error, SteadyTime sent,
                    int acks = -1);
  bool take_reply(const std::string& member, const std::function<void(std::unique_lock<std::mutex>&)>& take_in);
  void finish_async(std::unique_lock<std::mutex>& lk, const AcquireResult& result);
  AsyncWait end_async(std::unique_lock<std::mutex>& lk, bool untrack = true);
  void deliver(AsyncWait wait, const AcquireResult& result);
  void fail_async(std::unique_lock<std::mutex>& lk, const std::exception_ptr& error);
  void bound_async_rounds(SteadyTime at);
  void unbound_async_rounds();
  bool overdue(const Step& step, SteadyTime now) const;

  std::shared_ptr<ClientImpl> client_;
  const std::string name_;
  const std::uint32_t permits_;
  const LockOptions opts_;
  const Keys keys_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  Claim claim_;
  // The blocking wait's call in progress: a cancel cuts it short.
  const std::shared_ptr<MovableDeadline> calls_ = std::make_shared<MovableDeadline>();
  std::atomic<bool> cancel_requested_{false};  // the blocking wait's, for Wake::watch (no lock order with it)
  std::optional<AsyncWait> async_;             // the wait in progress is asynchronous
  std::uint64_t waits_ = 0;                    // asynchronous waits begun (their ids)
  bool abandoned_ = false;                     // the owning object went away during an asynchronous wait
};

}  // namespace fairlock::detail
