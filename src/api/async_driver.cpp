#include "api/async_driver.h"

#include <spdlog/spdlog.h>

#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <queue>
#include <set>
#include <utility>
#include <vector>

#include "base/owned_thread.h"
#include "base/retry_policy.h"
#include "net/call_deadline.h"
#include "net/deadline_keeper.h"
#include "node/script_batch.h"

namespace fairlock::detail {

using std::chrono::steady_clock;

namespace {

struct Timer {
  SteadyTime at;
  std::shared_ptr<AsyncWaiter> waiter;
  bool operator>(const Timer& o) const { return at > o.at; }
};

}  // namespace

struct AsyncDriver::State {
  Executor executor;
  std::shared_ptr<spdlog::logger> log;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::shared_ptr<AsyncWaiter>> ready;
  std::priority_queue<Timer, std::vector<Timer>, std::greater<>> timers;
  std::deque<std::function<void()>> jobs;
  std::multiset<SteadyTime> deadlines;  // of the waits in progress (track_deadline)
  std::chrono::milliseconds round_limit{0};
  std::shared_ptr<DeadlineKeeper> keeper;
  // The bound of the round of calls in progress: a wait with an earlier
  // deadline that begins meanwhile brings it nearer (track_deadline).
  std::shared_ptr<MovableDeadline> round_deadline = std::make_shared<MovableDeadline>();
  bool started = false;
  bool stopping = false;
  bool finished = false;  // the loop has ended: nothing scheduled now would run
  OwnedThread thread;     // started under mu, once

  // One round of the loop's work, taken under the lock.
  struct Call {
    Server* server;
    ScriptCall call;
    ScriptBatch::OnReply on_reply;
  };
  std::vector<Call> calls;  // posted (post_call), sent with the next round
  struct Round {
    std::vector<std::shared_ptr<AsyncWaiter>> waiters;
    std::vector<std::function<void()>> jobs;
    std::vector<Call> calls;
    std::vector<std::shared_ptr<AsyncWaiter>> dropped;  // stale timers, released unlocked
    bool last = false;
  };
  Round take(std::unique_lock<std::mutex>& lk);
  void begin_round();
  // Nothing scheduled now would run: the loop has ended, or it was stopped
  // before it ever started (and must not start after stop()).
  bool over() const { return finished || (stopping && !started); }
  void arm(const std::shared_ptr<AsyncWaiter>& w, SteadyTime at);
  void make_ready(const std::shared_ptr<AsyncWaiter>& w) {
    if (w->scheduled_) return;
    w->scheduled_ = true;
    ready.push_back(w);
  }
};

AsyncDriver::AsyncDriver(Executor executor, std::shared_ptr<spdlog::logger> log, std::chrono::milliseconds round_limit,
                         std::shared_ptr<DeadlineKeeper> keeper)
    : state_(std::make_shared<State>()) {
  state_->executor = std::move(executor);
  state_->round_limit = round_limit;
  state_->keeper = std::move(keeper);
  state_->log = std::move(log);
}

AsyncDriver::~AsyncDriver() {
  stop();
  // Destroyed on its own thread (the last reference to the client dropped
  // there): detached, the loop holds the state and ends by itself.
  state_->thread.stop();
}

void AsyncDriver::start_locked() {
  if (state_->started) return;
  state_->started = true;
  state_->thread.start([s = state_] { loop(s); });
}

bool AsyncDriver::schedule(const std::shared_ptr<AsyncWaiter>& waiter) {
  std::lock_guard<std::mutex> lk(state_->mu);
  if (state_->over()) return false;
  start_locked();
  state_->make_ready(waiter);
  state_->cv.notify_one();
  return true;
}

void AsyncDriver::post(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> lk(state_->mu);
    if (!state_->over()) {
      start_locked();
      state_->jobs.push_back(std::move(job));
      state_->cv.notify_one();
      return;
    }
  }
  job();
}

void AsyncDriver::deliver(std::function<void()> callback) noexcept {
  const std::shared_ptr<spdlog::logger>& log = state_->log;
  auto guarded = [callback = std::move(callback), log] {
    try {
      callback();
    } catch (const std::exception& e) {
      log->error("fairlock: an asynchronous callback threw: {}", e.what());
    } catch (...) {
      log->error("fairlock: an asynchronous callback threw");
    }
  };
  if (!state_->executor) return guarded();
  try {
    state_->executor(guarded);
  } catch (const std::exception& e) {  // never lose a callback: run it here
    log->error("fairlock: the executor threw ({}); running the callback on the async thread", e.what());
    guarded();
  } catch (...) {
    log->error("fairlock: the executor threw; running the callback on the async thread");
    guarded();
  }
}

void AsyncDriver::stop() noexcept {
  {
    std::lock_guard<std::mutex> lk(state_->mu);
    state_->stopping = true;
    state_->cv.notify_one();
  }
  // A callback on our own thread: the loop ends by itself once it returns
  // (join() does not wait for itself; the destructor detaches it). Not
  // started after stopping is set, so its start is seen here.
  state_->thread.join();
}

void AsyncDriver::State::arm(const std::shared_ptr<AsyncWaiter>& w, SteadyTime at) {
  std::lock_guard<std::mutex> lk(mu);
  if (w->armed_at_ == at) return;
  w->armed_at_ = at;
  timers.push(Timer{at, w});
  cv.notify_one();
}

AsyncDriver::State::Round AsyncDriver::State::take(std::unique_lock<std::mutex>& lk) {
  Round round;
  for (;;) {
    if (stopping) {  // every waiter is looked at once more; nothing waits for a timer
      while (!timers.empty()) {
        Timer t = timers.top();
        timers.pop();
        t.waiter->armed_at_.reset();
        make_ready(t.waiter);
      }
    }
    const auto now = steady_clock::now();
    while (!timers.empty() && timers.top().at <= now) {
      Timer t = timers.top();
      timers.pop();
      if (t.waiter->armed_at_ == t.at) {
        t.waiter->armed_at_.reset();
        make_ready(t.waiter);
      }
      round.dropped.push_back(std::move(t.waiter));
    }
    if (!ready.empty() || !jobs.empty() || !calls.empty()) break;
    if (stopping) {
      round.last = finished = true;
      return round;
    }
    if (timers.empty()) {
      cv.wait(lk);
    } else {
      const SteadyTime until = timers.top().at;  // a copy: arm() may reallocate the heap while this waits
      cv.wait_until(lk, until);
    }
  }
  for (auto& w : ready) {
    w->scheduled_ = false;
    round.waiters.push_back(std::move(w));
  }
  ready.clear();
  for (auto& j : jobs) round.jobs.push_back(std::move(j));
  jobs.clear();
  round.calls = std::move(calls);
  calls.clear();
  return round;
}

void AsyncDriver::post_call(Server& server, ScriptCall call, ScriptBatch::OnReply on_reply) {
  {
    std::lock_guard<std::mutex> lk(state_->mu);
    if (!state_->over()) {
      start_locked();
      state_->calls.push_back(State::Call{&server, std::move(call), std::move(on_reply)});
      state_->cv.notify_one();
      return;
    }
  }
  ScriptBatch batch;  // stopped: sent here and now
  batch.add(server, std::move(call), std::move(on_reply));
  batch.run();
}

void AsyncDriver::track_deadline(SteadyTime deadline) {
  std::lock_guard<std::mutex> lk(state_->mu);
  state_->deadlines.insert(deadline);
  state_->keeper->lower(state_->round_deadline, deadline + retry::kGiveUpGrace);
}

void AsyncDriver::untrack_deadline(SteadyTime deadline) {
  std::lock_guard<std::mutex> lk(state_->mu);
  auto it = state_->deadlines.find(deadline);
  if (it != state_->deadlines.end()) state_->deadlines.erase(it);
}

// How long this round's calls may take: until the earliest deadline of a
// wait in progress (and a grace), so that a stalled server never holds the
// thread, and with it every other wait's deadline, past it, including the
// deadlines of waits that begin during the round; and one round_limit
// (command_timeout) for the whole round, however many chunks its calls take.
// The earliest is rarely past: a wait past its deadline and grace times
// out without a call, and a cancelled one's leave is tracked from when it
// is sent (AsyncWait::advance; at shutdown the shutdown's bound is, in
// ClientImpl::shutdown); and the round gets kRoundFloor at least,
// so no round fails unsent.
void AsyncDriver::State::begin_round() {
  const SteadyTime now = steady_clock::now();
  SteadyTime bound = now + round_limit;
  std::lock_guard<std::mutex> lk(mu);  // a deadline tracked now is in `deadlines` or lowers the round
  if (!deadlines.empty()) {
    bound = std::min(bound, std::max(*deadlines.begin() + retry::kGiveUpGrace, now + retry::kRoundFloor));
  }
  round_deadline->begin(bound);
}

void AsyncDriver::loop(const std::shared_ptr<State>& s) {
  for (;;) {
    State::Round round;
    {
      std::unique_lock<std::mutex> lk(s->mu);
      round = s->take(lk);
    }
    if (round.last) return;
    ScriptBatch batch;
    for (auto& c : round.calls) batch.add(*c.server, std::move(c.call), std::move(c.on_reply));
    const auto now = steady_clock::now();
    for (auto& w : round.waiters) {
      try {
        if (auto at = w->advance(now, batch)) s->arm(w, *at);
      } catch (const std::exception& e) {  // advance reports its own errors; this is a bug
        s->log->error("fairlock: async wait step failed: {}", e.what());
      }
    }
    s->begin_round();
    {
      const MovableDeadline::Calls calls(*s->round_deadline);
      batch.run();
    }
    for (auto& job : round.jobs) {
      try {
        job();
      } catch (const std::exception& e) {
        s->log->error("fairlock: async job failed: {}", e.what());
      }
    }
  }
}

}  // namespace fairlock::detail
