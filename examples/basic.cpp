// The smallest program: connect, take the fair lock, print the fence.
#include <fairlock/fairlock.h>

#include <cstdlib>
#include <iostream>
#include <mutex>

int main() {
  fairlock::Options opts;
  if (const char* url = std::getenv("FAIRLOCK_URL")) opts.url = url;
  try {
    fairlock::Client client(opts);
    fairlock::FairLock lock(client, "orders:42");
    {
      std::unique_lock<fairlock::FairLock> guard(lock);  // waits its turn, FIFO
      std::cout << "holding orders:42 with fence " << lock.fence() << "\n";
      // released at the end of this block; the next waiter is handed the lock directly
    }
  } catch (const std::exception& e) {  // fairlock::Error: no server, a wrong password, ...
    std::cerr << "basic: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
