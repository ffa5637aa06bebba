// Takes a fair lock through an installed fairlock found with find_package().
#include <fairlock/fairlock.h>

#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <mutex>

int main() {
  try {
    if (std::strcmp(FAIRLOCK_VERSION_STRING, EXPECTED_VERSION) != 0) {
      std::cerr << "version.h says " << FAIRLOCK_VERSION_STRING << ", the package " << EXPECTED_VERSION << "\n";
      return 1;
    }
    fairlock::Options opts;
    if (const char* url = std::getenv("FAIRLOCK_URL")) opts.url = url;
    fairlock::Client client(opts);
    fairlock::FairLock lock(client, "consumers:find_package");
    std::lock_guard<fairlock::FairLock> guard(lock);
    std::cout << "find_package consumer: fairlock " << FAIRLOCK_VERSION_STRING << ", fence " << lock.fence() << "\n";
    return lock.owns_lock() && lock.fence() > 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "find_package consumer: " << e.what() << "\n";
    return 1;
  }
}
