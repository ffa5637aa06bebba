#pragma once
// The claim of one FairLock / FairSemaphore object: the shared core
// (api/claim_core.h) with leaving (api/leaving.h) and both drivers, the
// blocking one (api/blocking_wait.h) and the asynchronous one
// (api/async_wait.h). What is here needs both drivers: which one a wait
// runs on decides how it begins, how it is told to look again or to end
// soon, and what the object's going away does to it.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "api/async_wait.h"
#include "fairlock/async.h"
#include "fairlock/options.h"

namespace fairlock::detail {

class ClientImpl;

class Participant final : public AsyncWait {
 public:
  Participant(std::shared_ptr<ClientImpl> client, std::string name, std::uint32_t permits, LockOptions opts);

  void abandon() noexcept override;  // destructor: release or leave, never throws
  // The asynchronous driver: returns at once, `done` runs exactly once.
  AcquireHandle acquire_async(std::optional<SteadyTime> deadline, bool queue, AcquireCallback done);

 private:
  std::string start_wait(std::optional<SteadyTime> deadline, bool queue) override;
  void notify_waiter() override;
  void end_soon() override;
};

}  // namespace fairlock::detail
