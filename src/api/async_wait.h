#pragma once
// The asynchronous driver of a claim: the same Claim steps as the blocking
// one (api/blocking_wait.h), run by the client's async thread (AsyncDriver,
// api/async_driver.h, which drives every AsyncWaiter of the process), their
// script calls batched with other waiters'. Replies are settled by the
// core's code; every way out runs the callback exactly once. It uses
// nothing of BlockingWait: it sits on it only so that one object
// (Participant) carries both drivers over one claim.
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "api/async_driver.h"
#include "api/blocking_wait.h"
#include "api/name_watch.h"
#include "fairlock/async.h"
#include "fairlock/fair_semaphore.h"

namespace fairlock::detail {

class AsyncWait : public BlockingWait, public AsyncWaiter {
 public:
  void cancel_wait(std::uint64_t wait) noexcept;  // AcquireHandle::cancel
  void release_async(std::function<void(Released)> done);
  std::optional<SteadyTime> advance(SteadyTime now, ScriptBatch& batch) override;

 protected:
  using BlockingWait::BlockingWait;

  struct Wait {
    AcquireCallback done;
    std::uint64_t id;
    NameWatch watch;                     // of the name's wake channel (keyspace, sharded)
    std::optional<SteadyTime> deadline;  // tracked (AsyncDriver): the wait's, or its cancel's
  };
  // Begins the wait (start_wait done): returns its id, or throws if the
  // client shut down meanwhile.
  std::uint64_t begin_async(const std::string& member, std::optional<SteadyTime> deadline, bool queue,
                            AcquireCallback done);
  Wait end_async(std::unique_lock<std::mutex>& lk, bool untrack = true);
  void bound_async_rounds(SteadyTime at);
  void unbound_async_rounds();
  bool leaves_soon() const;

  std::optional<Wait> async_;  // the wait in progress is asynchronous
  bool abandoned_ = false;     // the owning object went away during an asynchronous wait

 private:
  void send_ask(ScriptBatch& batch, const std::string& member, const Step& step, SteadyTime now);
  void send_give_up(ScriptBatch& batch, const std::string& member, SteadyTime sent);
  void leave_async(std::unique_lock<std::mutex>& lk, ScriptBatch& batch, const std::string& member, Step::Kind why,
                   SteadyTime now);
  void send_confirm(ScriptBatch& batch, const std::string& member, const Step& step, SteadyTime now);
  void send_leave(ScriptBatch& batch, const std::string& member, Wait wait, std::exception_ptr outcome);
  void on_ask_reply(const std::string& member, const redisReply* reply, std::exception_ptr error, SteadyTime sent,
                    int acks = -1);
  bool take_reply(const std::string& member, const std::function<void(std::unique_lock<std::mutex>&)>& take_in);
  void finish_async(std::unique_lock<std::mutex>& lk, const AcquireResult& result);
  void deliver(Wait wait, const AcquireResult& result);
  void fail_async(std::unique_lock<std::mutex>& lk, const std::exception_ptr& error);
  bool overdue(const Step& step, SteadyTime now) const;

  std::uint64_t waits_ = 0;  // asynchronous waits begun (their ids)
};

}  // namespace fairlock::detail
