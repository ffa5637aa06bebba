// GoogleTest main of the fault-injection, soak, bad-input and security tests:
// starts a shared lock server and a recorder server for the whole run.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <memory>

#include "env.h"
#include "reaper.h"
#include "redis_server.h"

namespace fairlock::test {
namespace {
std::unique_ptr<RedisServer> g_server;
}
RedisServer& server() { return *g_server; }
std::string helper_path() { return FAIRLOCK_FAULT_WORKER; }
}  // namespace fairlock::test

namespace fairlock::faults {
namespace {
std::unique_ptr<test::RedisServer> g_recorder;
}
test::RedisServer& recorder() { return *g_recorder; }
std::string worker_path() { return FAIRLOCK_FAULT_WORKER; }

class Servers : public ::testing::Environment {
 public:
  void SetUp() override {
    // Keyspace-mode waiters need K and $ on the shared server.
    test::g_server = std::make_unique<test::RedisServer>(std::vector<std::string>{"--notify-keyspace-events", "K$"});
    g_recorder = std::make_unique<test::RedisServer>();
  }
  void TearDown() override {
    test::g_server.reset();
    g_recorder.reset();
  }
};
}  // namespace fairlock::faults

int main(int argc, char** argv) {
  fairlock::test::reap_children_when_we_die();
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new fairlock::faults::Servers);
  return RUN_ALL_TESTS();
}
