#include <gtest/gtest.h>

#include <memory>

#include "reaper.h"
#include "redis_server.h"

namespace fairlock::test {

namespace {
std::unique_ptr<RedisServer> g_server;
}

RedisServer& server() { return *g_server; }

std::string helper_path() { return FAIRLOCK_HELPER_PATH; }

class ServerEnvironment : public ::testing::Environment {
 public:
  void SetUp() override { g_server = std::make_unique<RedisServer>(); }
  void TearDown() override { g_server.reset(); }
};

}  // namespace fairlock::test

int main(int argc, char** argv) {
  fairlock::test::reap_children_when_we_die();
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new fairlock::test::ServerEnvironment);
  return RUN_ALL_TESTS();
}
