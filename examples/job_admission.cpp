// Job admission: a FairSemaphore of 3 admits jobs in arrival order, at most
// 3 at a time, and prints the admission timeline.
//   fairlock_job_admission [JOBS] [SLOTS]     (FAIRLOCK_URL selects the server)
#include <fairlock/fairlock.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

// The example itself; main() reports what it throws (no server, ...).
int run(int argc, char** argv) {
  const int jobs = argc > 1 ? std::atoi(argv[1]) : 10;
  const int slots = argc > 2 ? std::atoi(argv[2]) : 3;
  if (jobs < 1 || slots < 1) {
    std::fprintf(stderr, "usage: fairlock_job_admission [JOBS>=1] [SLOTS>=1]\n");
    return 2;
  }
  fairlock::Options opts;
  if (const char* url = std::getenv("FAIRLOCK_URL")) opts.url = url;
  fairlock::Client client(opts);
  const std::string name = "jobs:render:" + std::to_string(std::chrono::system_clock::now().time_since_epoch().count());

  const auto t0 = std::chrono::steady_clock::now();
  auto ms = [&] { return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count(); };
  std::mutex out;
  std::atomic<int> running{0}, max_running{0};
  std::vector<std::uint64_t> fence(jobs);
  std::vector<std::atomic<bool>> in_line(jobs);  // queued (or admitted): its arrival is fixed
  std::vector<std::thread> threads;
  std::exception_ptr failed;  // the first job's error (no server, ...), guarded by out
  auto job = [&](int j) {
    fairlock::LockOptions lo;
    lo.on_position = [&, j](std::size_t place) {  // called once the job is in the queue
      in_line[j] = true;
      std::lock_guard<std::mutex> lk(out);
      std::printf("%7.1f ms  job %2d queued     (place %zu)\n", ms(), j + 1, place + 1);
    };
    fairlock::FairSemaphore slot(client, name, static_cast<std::uint32_t>(slots), lo);
    {
      std::lock_guard<std::mutex> lk(out);
      std::printf("%7.1f ms  job %2d arrives\n", ms(), j + 1);
    }
    std::lock_guard<fairlock::FairSemaphore> admitted(slot);  // FIFO, at most `slots`
    in_line[j] = true;
    int now = ++running;
    for (int m = max_running; now > m && !max_running.compare_exchange_weak(m, now);) {
    }
    fence[j] = slot.fence();
    {
      std::lock_guard<std::mutex> lk(out);
      std::printf("%7.1f ms  job %2d admitted   (%d running)\n", ms(), j + 1, now);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(60 + 20 * (j % 3)));  // the job
    --running;
    std::lock_guard<std::mutex> lk(out);
    std::printf("%7.1f ms  job %2d done\n", ms(), j + 1);
  };
  for (int j = 0; j < jobs; ++j) {
    threads.emplace_back([&, j] {
      try {
        job(j);
      } catch (...) {
        std::lock_guard<std::mutex> lk(out);
        if (!failed) failed = std::current_exception();
        in_line[j] = true;
      }
    });
    // The next job arrives once this one is in line (bounded wait).
    for (int i = 0; i < 5000 && !in_line[j]; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  for (auto& t : threads) t.join();
  if (failed) std::rethrow_exception(failed);
  bool in_order = true;
  for (int j = 1; j < jobs; ++j) in_order = in_order && fence[j] > fence[j - 1];
  std::printf("admitted in arrival order: %s; most running at once: %d (limit %d)\n", in_order ? "yes" : "NO",
              max_running.load(), slots);
  return in_order && max_running.load() <= slots ? 0 : 1;
}

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "job_admission: %s\n", e.what());
    return 1;
  }
}
