#pragma once
// Worker processes of the contended scenarios (B, C, G). The driver starts
// them (the same executable, `fairlock_bench worker ...`), waits for
// "ready" on their stdout, sends "go <go_ns> <stop_ns>" on their stdin, and
// reads one record per lock request from the file named by --out.
#include <cstdint>
#include <string>
#include <vector>

namespace fbench {

// One request of one participant. Times are CLOCK_MONOTONIC ns; grant is 0
// when the request was not granted (stopped or cancelled at the end).
struct Rec {
  int part = 0;                 // participant id: process index * 1000 + thread
  std::int64_t wait = 0;        // lock() called
  std::int64_t grant = 0;       // lock() returned
  std::int64_t rel_start = 0;   // unlock() called
  std::int64_t rel_end = 0;     // unlock() returned
  std::uint64_t fence = 0;      // fairlock only
  std::int64_t wait_rt_us = 0;  // lock() called, CLOCK_REALTIME µs (the clock of Redis TIME on this machine)
};

struct WorkerTotals {
  long long rt = 0;  // client-counted round trips before stop (baselines only)
  long long errors = 0;
  long long heartbeats = 0, wakes_signal = 0, wakes_keyspace = 0, wakes_timer = 0, wakes_heartbeat = 0;
  std::string notify;  // transport actually used (fair)
  std::string first_error;
};

int worker_main(int argc, char** argv);

bool read_records(const std::string& path, std::vector<Rec>& out);

}  // namespace fbench
