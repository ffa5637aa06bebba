// The registration's formats (docs/PROTOCOL.md, "Who: client descriptions"):
// key, value, bounds, and the client id of a member.
#include <gtest/gtest.h>

#include "protocol/who.h"

namespace fairlock::detail {
namespace {

using namespace std::chrono_literals;

TEST(WhoFormat, KeyIsTaggedByTheClientIdAlone) {
  EXPECT_EQ(who_key("fairlock", "0123456789abcdef"), "fairlock:client:{0123456789abcdef}");
}

TEST(WhoFormat, ExpiryIsThreeLivenessesAndAtLeastThreeSeconds) {
  EXPECT_EQ(who_expiry(30ms), 3000ms);
  EXPECT_EQ(who_expiry(900ms), 3000ms);
  EXPECT_EQ(who_expiry(5000ms), 15000ms);
  EXPECT_EQ(who_expiry(2147483647ms), 6442450941ms);
}

TEST(WhoFormat, ValueRoundTrips) {
  const ClientDescription d{"build-7", 4242, 1795681637546, "fairlock run jobs -- make -j8 all"};
  const std::string v = who_value(d);
  EXPECT_EQ(v, "4242 1795681637546 build-7 fairlock run jobs -- make -j8 all");
  const auto back = parse_who_value(v);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->host, d.host);
  EXPECT_EQ(back->pid, d.pid);
  EXPECT_EQ(back->started_ms, d.started_ms);
  EXPECT_EQ(back->description, d.description);
  const auto empty = parse_who_value("1 2 h ");
  ASSERT_TRUE(empty);
  EXPECT_EQ(empty->description, "");
}

TEST(WhoFormat, MalformedValuesAreUnknown) {
  for (const char* v : {"", "1", "1 2", "1 2 h", "x 2 h d", "1 y h d", "1 2  d", "1.5 2 h d", " 1 2 h d"}) {
    EXPECT_FALSE(parse_who_value(v)) << v;
  }
}

TEST(WhoFormat, DescriptionsAreBoundedAtACharacterStart) {
  EXPECT_EQ(bounded_description(std::string(201, 'x')), std::string(200, 'x'));
  EXPECT_EQ(bounded_description("a\x01"
                                "b\x1f"
                                "c\x7f"),
            "a b c ");
  std::string euro = "ab";  // then 3-byte characters: byte 200 falls inside the 67th
  for (int i = 0; i < 80; ++i) euro += "\xe2\x82\xac";
  EXPECT_EQ(bounded_description(euro), euro.substr(0, 200));  // 2 + 66 * 3 = 200
  EXPECT_EQ(bounded_description("x" + euro), ("x" + euro).substr(0, 198));
}

TEST(WhoFormat, ClientIdOfAMember) {
  EXPECT_EQ(client_id_of_member("p0123456789abcdef:00112233445566778899aabb:30000"), "0123456789abcdef");
  EXPECT_EQ(client_id_of_member("nabc:def"), "abc");
  EXPECT_EQ(client_id_of_member("nodelimiter"), "");
  EXPECT_EQ(client_id_of_member("p:x"), "");
}

}  // namespace
}  // namespace fairlock::detail
