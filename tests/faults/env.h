#pragma once
// The shared-server environment of the fault-test executables (main.cpp):
// one lock server (fairlock::test::server()) for tests that do not fault it,
// and one recorder server that holds the grant histories and is never faulted.
#include <string>

#include "redis_server.h"

namespace fairlock::faults {

test::RedisServer& recorder();
// Path of fairlock_fault_worker.
std::string worker_path();

}  // namespace fairlock::faults
