// Uses fairlock through add_subdirectory(), with the API exactly as the core
// issue writes it; added: the URL from FAIRLOCK_URL when set, releasing what
// it took, and the exit status.
#include <fairlock/fairlock.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <mutex>

// `token` (in the verbatim lines below) only shows how to read the fence.
#pragma GCC diagnostic ignored "-Wunused-variable"

int main() try {
  // clang-format off
  fairlock::Options opts;                 // url = "redis://[user:password@]host:port[/db]" or
  opts.url = "redis://127.0.0.1:6379";    // "unix:///path/redis.sock"; timeouts; key_prefix;
  if (const char* url = std::getenv("FAIRLOCK_URL")) opts.url = url;
  fairlock::Client client(opts);          // logger (std::shared_ptr<spdlog::logger>, null = silent)
  fairlock::LockOptions lo;                // lo.lease (std::chrono::milliseconds), lo.auto_renew
  fairlock::FairLock lock(client, "orders:42", lo);       // LockOptions optional
  { std::unique_lock<fairlock::FairLock> guard(lock);     // waits its turn, FIFO
    std::uint64_t token = lock.fence(); }                 // fencing token of this grant
  bool ok = lock.try_lock();                   // never queues, never barges
  if (ok) lock.unlock();
  bool got = lock.try_lock_for(std::chrono::seconds(2));  // queues, leaves the queue on timeout
  lock.owns_lock();                            // false once the grant is known lost
  if (got) lock.unlock();
  fairlock::FairSemaphore slots(client, "jobs:render", 4); // same members; at most 4 holders
  // clang-format on
  bool admitted = slots.try_lock_for(std::chrono::seconds(2));
  if (admitted) slots.unlock();
  std::cout << "add_subdirectory consumer: fairlock " << FAIRLOCK_VERSION_STRING << ", lock fence " << lock.fence()
            << ", try_lock " << ok << ", try_lock_for " << got << ", semaphore " << admitted << "\n";
  return ok && got && admitted && !lock.owns_lock() ? 0 : 1;
} catch (const std::exception& e) {
  std::cerr << "add_subdirectory consumer: " << e.what() << "\n";
  return 1;
}
