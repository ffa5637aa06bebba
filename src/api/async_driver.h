#pragma once
// The client's async thread: it drives every asynchronous wait of the
// process, so no wait needs a thread of its own. A waiter is looked at when
// an event makes it ready (schedule) or its timer is due; the script calls
// the waiters ask for are sent together (ScriptBatch: one pipelined round
// trip per server) and the replies handed back. Callbacks go to the user's
// executor, or run on this thread. Started by the first asynchronous call.
#include <chrono>
#include <functional>
#include <memory>
#include <optional>

#include "node/script_batch.h"

namespace spdlog {
class logger;
}

namespace fairlock::detail {

class DeadlineKeeper;
using SteadyTime = std::chrono::steady_clock::time_point;
using Executor = std::function<void(std::function<void()>)>;

class AsyncWaiter {
 public:
  virtual ~AsyncWaiter() = default;
  // Runs the wait's next step on the async thread; script calls go into
  // `batch`. Returns when to look again if nothing happens before.
  virtual std::optional<SteadyTime> advance(SteadyTime now, ScriptBatch& batch) = 0;

 private:
  friend class AsyncDriver;
  // The driver's bookkeeping, guarded by its mutex.
  bool scheduled_ = false;
  std::optional<SteadyTime> armed_at_;
};

class AsyncDriver {
 public:
  // `round_limit`: the most one round of script calls may take, all chunks
  // together (a stalled server cuts it there); `keeper` cuts a round short
  // when a wait with an earlier deadline begins during it.
  AsyncDriver(Executor executor, std::shared_ptr<spdlog::logger> log, std::chrono::milliseconds round_limit,
              std::shared_ptr<DeadlineKeeper> keeper);
  ~AsyncDriver();
  AsyncDriver(const AsyncDriver&) = delete;
  AsyncDriver& operator=(const AsyncDriver&) = delete;

  // Look at this waiter soon (once, however often it is scheduled). False
  // once the driver has stopped: nothing would look at it.
  bool schedule(const std::shared_ptr<AsyncWaiter>& waiter);
  // Runs a job on the async thread (inline once stopped).
  void post(std::function<void()> job);
  // Sends a script call with the next round's batch (pipelined with the
  // waits' calls; inline once stopped); `on_reply` runs on the async thread.
  void post_call(Server& server, ScriptCall call, ScriptBatch::OnReply on_reply);
  // The deadlines of the waits in progress (and of a shutdown): no round of
  // script calls on the async thread may outlast the earliest of them (a
  // stalled server cuts the round there, a round under way included: the
  // waits past their deadline then time out at once).
  void track_deadline(SteadyTime deadline);
  void untrack_deadline(SteadyTime deadline);
  // Hands a callback to the executor, or runs it here; its exceptions are
  // logged, never propagated.
  void deliver(std::function<void()> callback) noexcept;
  // Looks once more at every waiter (the client has cancelled them all by
  // now), runs what they ask for, then ends the thread.
  void stop() noexcept;

 private:
  struct State;
  static void loop(const std::shared_ptr<State>& s);
  void start_locked();
  std::shared_ptr<State> state_;
};

}  // namespace fairlock::detail
