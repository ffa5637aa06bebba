// Bad input gets a typed error; unusual but legal names work and stay in one slot.
#include <gtest/gtest.h>

#include <functional>

#include "test_util.h"

namespace fairlock::test {
namespace {

using namespace std::chrono_literals;

struct BadInput {
  const char* what;
  std::function<void()> call;
  const char* expect_in_message;
};

TEST(Inputs, BadArgumentsThrowInvalidArgumentNamingTheArgument) {
  Client client(opts_for(server()));
  auto with = [](const std::function<void(Options&)>& f) {
    Options o = opts_for(server());
    f(o);
    return o;
  };
  LockOptions zero_lease;
  zero_lease.lease = 0ms;
  LockOptions negative_lease;
  negative_lease.lease = -5ms;
  LockOptions huge_lease;
  huge_lease.lease = std::chrono::hours(24 * 365);
  std::vector<BadInput> cases = {
      {"empty name", [&] { FairLock l(client, ""); }, "name"},
      {"oversized name", [&] { FairLock l(client, std::string(1025, 'x')); }, "name"},
      {"open brace", [&] { FairLock l(client, "a{b"); }, "name"},
      {"close brace", [&] { FairLock l(client, "}ab"); }, "name"},
      {"zero permits", [&] { FairSemaphore s(client, "p", 0); }, "permits"},
      {"huge permits", [&] { FairSemaphore s(client, "p", 4000000000u); }, "permits"},
      {"zero lease", [&] { FairLock l(client, "n", zero_lease); }, "lease"},
      {"negative lease", [&] { FairLock l(client, "n", negative_lease); }, "lease"},
      {"absurd lease", [&] { FairLock l(client, "n", huge_lease); }, "lease"},
      {"bad url scheme", [&] { Client c(with([](Options& o) { o.url = "http://x"; })); }, "url"},
      {"bad url port", [&] { Client c(with([](Options& o) { o.url = "redis://127.0.0.1:99999"; })); }, "url"},
      {"empty url host", [&] { Client c(with([](Options& o) { o.url = "redis://:6379"; })); }, "url"},
      {"relative unix path", [&] { Client c(with([](Options& o) { o.url = "unix://sock"; })); }, "url"},
      {"empty prefix", [&] { Client c(with([](Options& o) { o.key_prefix = ""; })); }, "key_prefix"},
      {"prefix with brace", [&] { Client c(with([](Options& o) { o.key_prefix = "a{"; })); }, "key_prefix"},
      {"zero liveness", [&] { Client c(with([](Options& o) { o.liveness_ttl = 0ms; })); }, "liveness_ttl"},
      {"negative timeout", [&] { Client c(with([](Options& o) { o.command_timeout = -1ms; })); }, "command_timeout"},
      {"zero connect timeout", [&] { Client c(with([](Options& o) { o.connect_timeout = 0ms; })); }, "connect_timeout"},
      {"zero pool", [&] { Client c(with([](Options& o) { o.pool_size = 0; })); }, "pool_size"},
  };
  for (const auto& c : cases) {
    try {
      c.call();
      ADD_FAILURE() << c.what << ": no exception";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(c.expect_in_message), std::string::npos) << c.what << ": " << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << c.what << ": wrong exception type: " << e.what();
    }
  }
}

TEST(Inputs, PermitsMismatchIsTypedAndChangesNothing) {
  Client client(opts_for(server()));
  std::string name = unique_name("mismatch");
  FairSemaphore three(client, name, 3);
  three.lock();
  FairSemaphore one(client, name, 1);
  EXPECT_THROW(one.lock(), PermitsMismatch);
  EXPECT_THROW(one.try_lock(), PermitsMismatch);
  EXPECT_THROW(one.try_lock_for(50ms), PermitsMismatch);
  EXPECT_EQ(server().cmd({"EXISTS", key(name, "o")}), "1");  // still held, inline
  EXPECT_EQ(zcard(server(), name, "h"), 0);
  EXPECT_EQ(zcard(server(), name, "q"), 0);
  three.unlock();
  EXPECT_TRUE(one.try_lock());  // idle name: a new permit count is fine
  one.unlock();
}

TEST(Inputs, NonPositiveTimeoutsBehaveAsTryLock) {
  Client client(opts_for(server()));
  std::string name = unique_name("zero-timeout");
  FairLock a(client, name), b(client, name);
  a.lock();
  EXPECT_FALSE(b.try_lock_for(0ms));
  EXPECT_FALSE(b.try_lock_for(-5s));
  EXPECT_FALSE(b.try_lock_until(std::chrono::system_clock::now() - 1h));
  EXPECT_EQ(zcard(server(), name, "q"), 0);
  a.unlock();
  EXPECT_TRUE(b.try_lock_for(0ms));
  b.unlock();
}

TEST(Inputs, AbsurdTimeoutsDoNotOverflow) {
  Client client(opts_for(server()));
  FairLock a(client, unique_name("huge-timeout"));
  EXPECT_TRUE(a.try_lock_for(std::chrono::hours::max()));
  a.unlock();
  EXPECT_TRUE(a.try_lock_until(std::chrono::steady_clock::time_point::max()));
  a.unlock();
}

TEST(Inputs, UnreachableServerIsAConnectionError) {
  Options o = opts_for(server());
  o.url = "redis://127.0.0.1:1";
  o.connect_timeout = 300ms;
  Client client(o);
  FairLock lock(client, "x");
  EXPECT_THROW(lock.lock(), ConnectionError);
  EXPECT_THROW(lock.try_lock(), ConnectionError);
}

// The hash tag of a key, as Redis Cluster computes it.
std::string hash_tag(const std::string& k) {
  auto open = k.find('{');
  if (open == std::string::npos) return k;
  auto close = k.find('}', open + 1);
  if (close == std::string::npos || close == open + 1) return k;
  return k.substr(open + 1, close - open - 1);
}

TEST(Inputs, UnusualNamesWorkAndKeepOneSlot) {
  Client client(opts_for(server()));
  std::vector<std::string> names = {"with space " + unique_name(""), "colons:a:b:" + unique_name(""),
                                    std::string("nul\0byte", 8) + unique_name(""), "\xff\xfe" + unique_name("bin"),
                                    std::string(1024, 'n')};
  for (const auto& name : names) {
    FairLock a(client, name), b(client, name);
    a.lock();
    std::thread t([&] { b.lock(); });
    ASSERT_TRUE(eventually([&] { return zcard(server(), name, "q") == 1; }));
    for (const char* suffix : {"q", "w", "h", "g", "seq"}) {
      EXPECT_EQ(hash_tag(key(name, suffix)), name);
    }
    a.unlock();
    t.join();
    EXPECT_TRUE(b.owns_lock());
    b.unlock();
    EXPECT_EQ(server().cmd({"EXISTS", key(name, "q"), key(name, "w"), key(name, "h"), key(name, "g")}), "0");
    EXPECT_EQ(server().cmd({"EXISTS", key(name, "seq")}), "1");
  }
  // A name that would end the hash tag early is refused, so "pre" and
  // "pre}:q" can never share keys.
  EXPECT_THROW(FairLock(client, "pre}:q"), std::invalid_argument);
}

TEST(Inputs, CustomPrefixIsUsed) {
  Options o = opts_for(server());
  o.key_prefix = "myapp:locks";
  Client client(o);
  std::string name = unique_name("prefixed");
  FairLock lock(client, name);
  lock.lock();
  EXPECT_EQ(server().cmd({"EXISTS", key(name, "o", "myapp:locks")}), "1");  // held inline under the prefix
  EXPECT_EQ(server().cmd({"EXISTS", key(name, "seq")}), "0");
  lock.unlock();
}

}  // namespace
}  // namespace fairlock::test
