#include "fairlock/fair_semaphore.h"

#include <stdexcept>

#include "api/client_impl.h"
#include "api/participant.h"

namespace fairlock {

namespace {
detail::Participant& live(const std::shared_ptr<detail::Participant>& p) {
  if (!p) throw std::logic_error("fairlock: use of a moved-from lock object");
  return *p;
}

// The deadline `timeout` (> 0) from now; none for one so long that the
// clock would overflow (over about 31 years: such a wait waits as lock()).
std::optional<std::chrono::steady_clock::time_point> deadline_in(std::chrono::duration<double> timeout) {
  if (timeout.count() > 1e9) return std::nullopt;
  return std::chrono::steady_clock::now() + std::chrono::ceil<std::chrono::steady_clock::duration>(timeout);
}
}  // namespace

FairSemaphore::FairSemaphore(Client& client, std::string name, std::uint32_t permits, LockOptions options)
    : p_(std::make_shared<detail::Participant>(client.impl_, std::move(name), permits, std::move(options))) {}

FairSemaphore::~FairSemaphore() {
  if (p_) p_->abandon();
}

FairSemaphore::FairSemaphore(FairSemaphore&&) noexcept = default;

FairSemaphore& FairSemaphore::operator=(FairSemaphore&& other) noexcept {
  if (this != &other) {
    if (p_) p_->abandon();
    p_ = std::move(other.p_);
  }
  return *this;
}

void FairSemaphore::lock() { live(p_).acquire(std::nullopt, true); }

bool FairSemaphore::try_lock() { return live(p_).acquire(std::nullopt, false); }

bool FairSemaphore::wait_for(std::chrono::duration<double> timeout) {
  auto& p = live(p_);
  if (!(timeout.count() > 0)) return p.acquire(std::nullopt, false);  // <= 0 or NaN: try_lock
  return p.acquire(deadline_in(timeout), true);
}

Released FairSemaphore::release() noexcept { return p_ ? p_->release() : Released::not_held; }

void FairSemaphore::unlock() noexcept {
  if (p_) p_->unlock();
}

AcquireHandle FairSemaphore::lock_async(AcquireCallback done) {
  return live(p_).acquire_async(std::nullopt, true, std::move(done));
}

AcquireHandle FairSemaphore::lock_async(std::chrono::milliseconds timeout, AcquireCallback done) {
  auto& p = live(p_);
  if (timeout.count() <= 0) return p.acquire_async(std::nullopt, false, std::move(done));
  return p.acquire_async(deadline_in(timeout), true, std::move(done));
}

namespace {
std::pair<std::future<std::uint64_t>, AcquireCallback> promised() {
  auto promise = std::make_shared<std::promise<std::uint64_t>>();
  auto future = promise->get_future();
  return {std::move(future), [promise](const AcquireResult& r) {
            if (r) {
              promise->set_value(r.fence());
            } else {
              promise->set_exception(r.error());
            }
          }};
}
}  // namespace

std::future<std::uint64_t> FairSemaphore::lock_future() {
  auto [future, done] = promised();
  lock_async(std::move(done));
  return std::move(future);
}

std::future<std::uint64_t> FairSemaphore::lock_future(std::chrono::milliseconds timeout) {
  auto [future, done] = promised();
  lock_async(timeout, std::move(done));
  return std::move(future);
}

void FairSemaphore::release_async(std::function<void(Released)> done) {
  if (!p_) {
    if (done) done(Released::not_held);
    return;
  }
  p_->release_async(std::move(done));
}

void FairSemaphore::cancel() noexcept {
  if (p_) p_->cancel();
}

bool FairSemaphore::owns_lock() const noexcept { return p_ && p_->owns(); }

std::uint64_t FairSemaphore::fence() const noexcept { return p_ ? p_->fence() : 0; }

const std::string& FairSemaphore::name() const noexcept {
  static const std::string empty;
  return p_ ? p_->name() : empty;
}

std::uint32_t FairSemaphore::permits() const noexcept { return p_ ? p_->permits() : 0; }

}  // namespace fairlock
