#pragma once
#include <string>
#include <utility>

#include "fairlock/client.h"
#include "fairlock/fair_semaphore.h"
#include "fairlock/options.h"

namespace fairlock {

// A fair (FIFO) distributed mutex: a FairSemaphore of one permit.
class FairLock : public FairSemaphore {
 public:
  FairLock(Client& client, std::string name, LockOptions options = LockOptions())
      : FairSemaphore(client, std::move(name), 1, std::move(options)) {}
};

}  // namespace fairlock
