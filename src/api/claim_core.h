#pragma once
// What every way of waiting on a name shares: the Claim state machine
// behind a mutex, the script calls' arguments and the settling of their
// replies, the claim's place in the session (it is a SessionMember: the
// heartbeat, wake and shutdown events of the client's threads) and the
// reporting of queue positions and losses to the user's callbacks. The
// drivers sit on top (api/blocking_wait.h, api/async_wait.h), with leaving
// the queue in between (api/leaving.h); Participant joins them for one
// FairLock / FairSemaphore object. A recipe (read-write lock, multi-lock,
// election) builds on this core and Leaving, not on Participant.
#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "core/claim.h"
#include "core/session.h"
#include "fairlock/errors.h"
#include "fairlock/options.h"
#include "protocol/calls.h"

namespace fairlock::detail {

class ClientImpl;
class NameWatch;
struct Node;
class Wake;

class ClaimCore : public SessionMember, public std::enable_shared_from_this<ClaimCore> {
 public:
  bool owns() const noexcept;
  std::uint64_t fence() const noexcept;
  const std::string& name() const noexcept override { return name_; }
  std::uint32_t permits() const noexcept override { return permits_; }
  const Keys& keys() const noexcept override { return keys_; }
  // Release or leave, never throws (the owning object goes away).
  virtual void abandon() noexcept = 0;

  // SessionMember: called by the client's threads (claim_core_events.cpp).
  std::optional<Beat> beat_item(SteadyTime now) override;
  void on_beat(const Beat& beat, BeatResult result, SteadyTime sent_at) override;
  void on_beat_error(const Beat& beat, const std::string& error) override;
  bool on_signal(const std::string& member, std::uint64_t fence) override;
  bool kick() override;
  std::optional<std::uint64_t> waiting_ticket() const override;
  std::optional<std::string> on_shutdown() override;

 protected:
  ClaimCore(std::shared_ptr<ClientImpl> client, std::string name, std::uint32_t permits, LockOptions opts);

  // What the drivers on top provide. start_wait begins a wait (a fresh
  // member, enlisted in the session) and returns its member; notify_waiter
  // has the wait look again (called locked); end_soon ends a cancelled wait
  // soon, whatever the server does (called locked).
  virtual std::string start_wait(std::optional<SteadyTime> deadline, bool queue) = 0;
  virtual void notify_waiter() = 0;
  virtual void end_soon() = 0;

  // This object, as the part `me` of it, for callbacks that must keep it alive.
  template <class Part>
  std::shared_ptr<Part> shared_as(Part* me) {
    return std::shared_ptr<Part>(shared_from_this(), me);
  }

  Node& node() const;
  bool signalled_per_name(const Wake& wake) const;
  WaitContext wait_context(NameWatch& watch) const;
  AcquireArgs acquire_args(const std::string& member, const Step& step) const;
  ScriptCall confirm_call_of(const std::string& member) const;
  void settle_ask(std::unique_lock<std::mutex>& lk, const Acquired& reply, const std::exception_ptr& error,
                  SteadyTime sent, int acks = -1);
  // With Options::sync_replicas (Step::confirm, Step::not_replicated).
  void settle_confirm(std::unique_lock<std::mutex>& lk, const BeatResult& result, int acks,
                      const std::exception_ptr& error, SteadyTime sent);
  NotReplicatedError not_replicated() const;
  Cancelled wait_cancelled() const;
  EvictedError wait_evicted() const;
  void apply(std::unique_lock<std::mutex>& lk, const Effects& fx);
  void report_position(std::size_t position) noexcept;
  void report_lost(const std::string& why) noexcept;

  std::shared_ptr<ClientImpl> client_;
  const std::string name_;
  const std::uint32_t permits_;
  const LockOptions opts_;
  const Keys keys_;

  mutable std::mutex mu_;
  Claim claim_;
};

}  // namespace fairlock::detail
