// Takes a fair lock through an installed fairlock, compiled and linked with a
// plain compiler line and pkg-config (see build.sh).
#include <fairlock/fairlock.h>

#include <cstdlib>
#include <exception>
#include <iostream>
#include <mutex>

int main() {
  try {
    fairlock::Options opts;
    if (const char* url = std::getenv("FAIRLOCK_URL")) opts.url = url;
    fairlock::Client client(opts);
    fairlock::FairSemaphore slots(client, "consumers:pkg-config", 2);
    std::lock_guard<fairlock::FairSemaphore> guard(slots);
    std::cout << "pkg-config consumer: fairlock " << FAIRLOCK_VERSION_STRING << ", fence " << slots.fence() << "\n";
    return slots.owns_lock() && slots.fence() > 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "pkg-config consumer: " << e.what() << "\n";
    return 1;
  }
}
