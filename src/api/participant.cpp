// Participant (api/participant.h): what needs both drivers.
#include "api/participant.h"

#include <stdexcept>
#include <utility>

#include "api/client_impl.h"
#include "base/retry_policy.h"
#include "fairlock/errors.h"
#include "node/router.h"
#include "protocol/formats.h"

namespace fairlock::detail {

using std::chrono::steady_clock;

Participant::Participant(std::shared_ptr<ClientImpl> client, std::string name, std::uint32_t permits, LockOptions opts)
    : AsyncWait(std::move(client), std::move(name), permits, std::move(opts)) {}

AcquireHandle Participant::acquire_async(std::optional<SteadyTime> deadline, bool queue, AcquireCallback done) {
  if (!done) throw BadOption("done", "the callback must not be empty");
  client_->check_running();
  const std::string member = start_wait(deadline, queue);  // throws while held or waiting
  const std::uint64_t id = begin_async(member, deadline, queue, std::move(done));
  return AcquireHandle(std::weak_ptr<Participant>(shared_as(this)), id);
}

std::string Participant::start_wait(std::optional<SteadyTime> deadline, bool queue) {
  std::string member = new_member(client_->mode(), client_->id(), opts_.lease, node().wake.sharded());
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (async_) throw std::logic_error("fairlock: " + name_ + " is already waiting asynchronously");
    claim_.begin(member, queue, deadline, name_);
    cancel_requested_ = false;
  }
  client_->session().enlist(member, shared_from_this(), opts_.lease);
  return member;
}

void Participant::abandon() noexcept {
  ReleasePlan plan;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (async_) {  // an asynchronous wait, perhaps granted but not yet delivered: it ends Cancelled
      abandoned_ = true;
      if (claim_.cancel()) {
        end_soon();
      } else {
        notify_waiter();
      }
      return;
    }
    if (claim_.cancel()) {  // another thread waits: make it leave
      end_soon();
      return;
    }
    plan = claim_.begin_release();
  }
  if (plan.kind == ReleasePlan::Kind::not_held) return;
  client_->session().delist(plan.member);
  if (plan.kind == ReleasePlan::Kind::release) release_quietly(plan.member, plan.queued_first);
}

// The wait should look again: wake the parked thread, or have the async
// thread look at it. Called locked.
void Participant::notify_waiter() {
  if (async_) {
    client_->async().schedule(shared_as(this));
  } else {
    cv_.notify_all();
  }
}

// The wait was cancelled: it ends soon, whatever the server does. A call
// in progress gets a short grace to answer, then it is cut (the caller's
// thread may be blocked in it on a stalled server), and the wait leaves the
// queue within one more; an async wait at shutdown within the shutdown's
// bound (leaves_soon). Called locked.
void Participant::end_soon() {
  notify_waiter();
  const SteadyTime now = steady_clock::now();
  if (!async_) {
    cancel_requested_ = true;  // a subscription it waits for gives up too
    node().wake.nudge();
    return client_->keeper()->lower(calls_, now + retry::kGiveUpGrace);
  }
  if (!leaves_soon()) return unbound_async_rounds();
  if (!async_->deadline || now < *async_->deadline) bound_async_rounds(now);
}

}  // namespace fairlock::detail

namespace fairlock {

void AcquireHandle::cancel() const noexcept {
  if (auto p = p_.lock()) p->cancel_wait(wait_);
}

}  // namespace fairlock
