// Reading the server's maxmemory and maxmemory-policy out of INFO's text (the
// check itself, against servers, is in tests/test_eviction_policy.cpp).
#include <gtest/gtest.h>

#include "node/eviction_check.h"

namespace fairlock::test {
namespace {

TEST(Eviction, PolicyFromInfoText) {
  using detail::policy_from_info;
  auto p = policy_from_info(
      "# Memory\r\nused_memory:1\r\nmaxmemory:104857600\r\nmaxmemory_human:100.00M\r\n"
      "maxmemory_policy:volatile-ttl\r\n");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->policy, "volatile-ttl");
  EXPECT_EQ(p->maxmemory, 104857600u);
  EXPECT_FALSE(policy_from_info("# Memory\r\nmaxmemory:0\r\n"));
  EXPECT_FALSE(policy_from_info("maxmemory:x\r\nmaxmemory_policy:noeviction\r\n"));
}

}  // namespace
}  // namespace fairlock::test
