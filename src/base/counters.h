#pragma once
// The process's Stats, counted as they happen. One definition of the fields:
// fairlock::Stats itself, updated under a mutex (a few increments per grant).
#include <cstdint>
#include <mutex>

#include "fairlock/client.h"

namespace fairlock::detail {

class Counters {
 public:
  void add(std::uint64_t Stats::*field, std::uint64_t n = 1) {
    std::lock_guard<std::mutex> lk(mu_);
    stats_.*field += n;
  }
  Stats snapshot() const {
    std::lock_guard<std::mutex> lk(mu_);
    return stats_;
  }

 private:
  mutable std::mutex mu_;
  Stats stats_;
};

}  // namespace fairlock::detail
