#pragma once
// One claim on one name as a state machine: events in (a script's reply, a
// wake signal, a heartbeat result, a kick, a cancel, the clock), the next
// step out (ask Redis, wait until, give up, done). It never blocks, never
// does I/O and never reads the clock: the driver that owns it (the blocking
// one in participant.cpp) does those and serialises the calls.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "base/counters.h"
#include "base/retry_policy.h"
#include "core/session.h"
#include "protocol/calls.h"

namespace fairlock::detail {

struct ClaimConfig {
  std::uint32_t permits;
  std::chrono::milliseconds lease;
  std::chrono::milliseconds liveness;
  bool auto_renew;
  // Options::sync_replicas (0: off), sync_timeout and the PUBLISH channel
  // before each WAIT (node/sync_wait.h): a grant is the caller's only once
  // WAIT confirmed that many replicas have it.
  SyncWait sync{};
};

// What the driver knows of the client when it asks for the next step.
struct WaitContext {
  bool stopped;                                // the client is shutting down
  bool signals;                                // a wake signal would reach this wait
  std::chrono::milliseconds heartbeat_period;  // caps the polling interval
};

struct Step {
  enum class Kind {
    ask,        // run acquire (`queue`, `first` say how), then on_acquired / on_ask_failed
    wait,       // sleep until `until` or until an event arrives
    give_up,    // the deadline passed: run cancel, then on_gave_up
    cancelled,  // cancel() or shutdown: leave the queue, then finish_cancelled
    granted,    // done: held
    timed_out,  // done: left the queue at the deadline
    busy,       // done: try_lock found no free permit
    evicted,    // done: an operator evicted the waiter; it is in no queue
    // With sync_replicas, a grant not yet acknowledged by enough replicas:
    confirm,         // renew it and WAIT `sync` (confirm_call), then on_confirmed / on_confirm_failed
    not_replicated,  // the deadline passed unacknowledged: leave (releasing it), then finish_not_replicated
  } kind;
  SteadyTime until{};
  bool queue = true;
  bool first = false;  // the wait's first ask: its member was never sent
  // ask, confirm: WAIT this long after the call, on its connection (0: no
  // WAIT). A first ask's grant is that call's own write; any other comes
  // from a confirm.
  std::chrono::milliseconds sync{0};
};

// What a release has to do.
struct ReleasePlan {
  enum class Kind { not_held, released_at_shutdown, release } kind = Kind::not_held;
  std::string member;
  std::string lost_reason;    // non-empty: the grant was known lost before
  bool queued_first = false;  // the member queued before it was granted (protocol/calls.h: release_call)
};

// What an event changed that the driver must act on outside its lock.
struct Effects {
  bool wake = false;                    // a waiting driver should look again
  std::optional<std::size_t> position;  // report to on_position
  std::optional<std::string> lost;      // the grant was lost, with this reason
};

class Claim {
 public:
  Claim(ClaimConfig config, Counters& counters) : cfg_(config), counters_(counters) {}

  // Starts a wait for a fresh member. Throws std::logic_error while held,
  // waiting, or holding a grant found lost that release() has not taken.
  void begin(std::string member, bool queue, std::optional<SteadyTime> deadline, const std::string& name);
  Step next(SteadyTime now, const WaitContext& ctx);
  // The acquire reply of a call sent at `sent`; `acks`: what the WAIT after
  // it answered, if the step asked for one.
  Effects on_acquired(const Acquired& reply, SteadyTime sent, int acks = -1);
  // The confirm call sent at `sent` came back (its heartbeat result and what
  // WAIT answered), or failed in a way that a retry may cure.
  void on_confirmed(const BeatResult& result, int acks, SteadyTime sent);
  void on_confirm_failed(SteadyTime now);
  void finish_not_replicated();
  // How an acquire call failed.
  enum class Failure {
    refused,   // an error reply: not retried
    unsent,    // no connection could be opened to a server never reached: nothing was sent
    down,      // no connection now to a server this client reached before (a restart): nothing was sent
    in_doubt,  // the call was sent, its reply lost: the script may have run
    not_run,   // the server kept losing the scripts (FUNCTION or SCRIPT FLUSH): it did not run
  };
  // The acquire call sent at `sent` failed; true if the wait retries after
  // a backoff.
  bool on_ask_failed(SteadyTime sent, SteadyTime now, Failure failure);
  // The cancel call sent at `sent` at the deadline came back.
  void on_gave_up(const CancelResult& reply, SteadyTime sent);
  void finish_cancelled();
  // The server said an operator evicted the waiting member: the wait ends.
  void on_evicted();
  // Any other way out of a wait (an error): idle again.
  void abort();

  ReleasePlan begin_release();
  // The client shuts down: a wait is cancelled; a held grant's member is
  // returned (the client releases it).
  std::optional<std::string> on_shutdown();
  // The owning object goes away: true if a wait was told to leave.
  bool cancel();
  bool cancel_requested() const { return wait_.cancelled; }

  // --- the session's events
  std::optional<SessionMember::Beat> beat_item(SteadyTime now, Effects& effects);
  Effects on_beat(const std::string& member, bool sent_as_holder, std::chrono::milliseconds sent_lease,
                  BeatResult result, SteadyTime sent_at);
  void on_beat_error(const std::string& member, const std::string& error);
  bool on_signal(const std::string& member, std::uint64_t fence);
  bool kick();
  std::optional<std::uint64_t> waiting_ticket() const;

  bool owns(SteadyTime now) const { return state_ == State::held && now < grant_.valid_until; }
  // Waiting, or granted but not yet acknowledged (confirming): the caller
  // does not hold it, and leaving releases it.
  bool waiting() const { return state_ == State::waiting || state_ == State::confirming; }
  std::optional<SteadyTime> deadline() const { return wait_.deadline; }
  // When the call of `step`, sent at `now`, must end (nullopt: Options'
  // timeouts alone bound it): the wait's deadline; a call that WAITs, when
  // its WAIT is answered (its timeout, then the server's tick), but never
  // later than kSyncPastDeadline after the deadline.
  std::optional<SteadyTime> call_by(const Step& step, SteadyTime now) const;
  // When a leave of the queue begun at `now` (the cancel at the deadline, or
  // leaving after a cancel or a grant not acknowledged) must end: after
  // kGiveUpGrace, counted from the deadline at the latest. What is left
  // then is settled in the background: a timed wait ends by its deadline
  // and the grace whatever the server does.
  SteadyTime leave_by(SteadyTime now) const;
  // The grant of `member` is this claim's (held, or held and found lost).
  bool holds(const std::string& member) const {
    return (state_ == State::held || state_ == State::lost) && wait_.member == member;
  }
  std::uint64_t fence() const { return grant_.fence; }
  const std::string& member() const { return wait_.member; }
  // The WAIT a step asks for (Step::sync), as node/sync_wait.h sends it.
  SyncWait sync_wait(const Step& step) const { return SyncWait{cfg_.sync.replicas, step.sync, cfg_.sync.channel}; }

 private:
  // confirming: granted in Redis, not yet acknowledged by sync_replicas
  // replicas (no caller holds it: owns() is false, unlock() finds nothing).
  enum class State { idle, waiting, confirming, held, lost, shut_down };
  Step ask(bool queue, SteadyTime now);
  Step granted_with(std::uint64_t fence, SteadyTime valid_until);
  void grant(std::uint64_t fence, SteadyTime valid_until, bool acknowledged);
  Step confirm_step(SteadyTime now, const WaitContext& ctx);
  std::chrono::milliseconds sync_for(SteadyTime now) const;
  bool acknowledged(int acks) const { return cfg_.sync.replicas == 0 || acks >= cfg_.sync.replicas; }
  void lose_unconfirmed();
  void on_beat_confirming(const BeatResult& result, bool sent_as_holder, SteadyTime sent_at, Effects& fx);
  SessionMember::Beat renewal(std::chrono::milliseconds lease) const;
  std::chrono::milliseconds handoff_validity() const;
  static SteadyTime server_deadline(SteadyTime sent, long long remaining_ms);
  void note_next_expiry(long long next_ms, SteadyTime sent);
  std::optional<Step> take_signal(SteadyTime now, const WaitContext& ctx);
  SteadyTime wake_time(SteadyTime now, const WaitContext& ctx) const;
  std::chrono::steady_clock::duration poll_interval(std::chrono::milliseconds heartbeat_period) const;
  std::string mark_lost(std::string why);
  bool may_retry(SteadyTime sent, SteadyTime now, Failure failure);

  // The last wait, begun by begin(): in progress while waiting; its member
  // and ticket then stay the grant's.
  struct Wait {
    std::string member{};
    bool queue = true;
    std::optional<SteadyTime> deadline{};
    std::optional<Step::Kind> outcome{};  // set once the wait has ended
    bool sent_ask = false;                // an ask step was handed out
    bool asked = false;                   // a first reply came back
    bool maybe_queued = false;            // or a first call may have run
    bool counted = false;                 // counted in Stats::waits
    // Its place, as the last reply or heartbeat reported it.
    std::uint64_t ticket = 0;
    long long position = -1;
    long long next_expiry_ms = -1;  // the earliest holder's deadline then (-1: none)
    SteadyTime expiry_at{};
    SteadyTime refreshed_at{};  // the send time of the last call that saw it still waiting
    SteadyTime last_ok{};       // the send time of the last acquire that came back
    // Events not yet taken by next().
    bool signalled = false;  // a grant handed to it, with signal_fence
    std::uint64_t signal_fence = 0;
    bool kicked = false;
    bool cancelled = false;
    std::optional<SteadyTime> timer_at{};       // its own timer
    std::optional<SteadyTime> retry_at{};       // after a failed ask
    std::optional<SteadyTime> failing_since{};  // asks have failed in a row since then
    std::chrono::milliseconds backoff = retry::kFirstBackoff;
    int confirms = 0;  // WAITs sent for its grant (a first ask's included)
  };
  // The grant, as the server reported it; reset by begin() but for its fence.
  struct Grant {
    std::uint64_t fence = 0;  // of the current or last grant (0 before any)
    SteadyTime valid_until{};
    bool lease_confirmed = false;  // a call that renewed it to a full lease came back
    std::string lost_reason{};
    std::string beat_error{};  // the last heartbeat failure, until one succeeds
  };

  const ClaimConfig cfg_;
  Counters& counters_;
  State state_ = State::idle;
  Wait wait_;
  Grant grant_;
};

}  // namespace fairlock::detail
