#pragma once
// Checks the tests of the multi-process harnesses (sentinel_set.h,
// redis_cluster.h) share: no process left behind when one cannot be ready.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

namespace fairlock::test {

// Redis processes that are children of this test process now.
inline int redis_children() {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    std::ifstream stat(e.path() / "stat");
    std::string pid, comm, state;
    long ppid = 0;
    if (stat >> pid >> comm >> state >> ppid && ppid == ::getpid() && comm.rfind("(redis", 0) == 0) ++n;
  }
  return n;
}

// `make()` builds a harness with a bound too short to be ready: it throws a
// runtime_error whose text starts with `prefix`, and leaves no process.
template <class Make>
void expect_not_ready_and_nothing_left(const Make& make, const std::string& prefix) {
  const int before = redis_children();
  try {
    make();
    ADD_FAILURE() << "ready within a bound too short to be";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()).rfind(prefix, 0), 0u) << e.what();
  }
  EXPECT_EQ(redis_children(), before);
}

}  // namespace fairlock::test
