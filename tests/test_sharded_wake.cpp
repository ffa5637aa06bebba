// The sharded wake's subscriber (detail::Wake with WakeConfig::sharded, as
// the cluster router makes it), on standalone servers, which have shard
// channels too: a message on a watched shard channel is a grant, a refused
// channel is asked for again only by a new watch, and a wait's watch
// follows its name to another node. The whole path through a client, on a
// real cluster: tests/test_cluster.cpp.
#include <gtest/gtest.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "api/participant.h"
#include "fairlock/async.h"
#include "fairlock/fair_lock.h"
#include "node/server.h"
#include "node/wake.h"
#include "redis_server.h"
#include "test_util.h"

namespace fairlock::test {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

std::string shard_channel(const std::string& name, const std::string& cid) {
  return "fairlock:{" + name + "}:wake:" + cid;
}

// SSUBSCRIBEs the server refused (ACL), from INFO commandstats.
long long refused_ssubscribes(const RedisServer& s) {
  const std::string info = s.cmd({"INFO", "commandstats"});
  const auto at = info.find("cmdstat_ssubscribe:");
  if (at == std::string::npos) return 0;
  const auto field = info.find("rejected_calls=", at);
  return std::stoll(info.substr(field + 15));
}

// A user who may run everything but subscribe to no channel but those of
// names beginning with "ok": every other SSUBSCRIBE answers NOPERM, as a
// node that no longer serves a slot answers MOVED.
struct ChannelsDenied {
  explicit ChannelsDenied(const RedisServer& s) : server(s) {
    server.cmd({"ACL", "SETUSER", "nochannels", "on", ">pw", "~*", "+@all", "resetchannels", "&fairlock:{ok*"});
  }
  ~ChannelsDenied() { server.cmd({"ACL", "DELUSER", "nochannels"}); }
  ChannelsDenied(const ChannelsDenied&) = delete;
  ChannelsDenied& operator=(const ChannelsDenied&) = delete;
  std::string url() const { return "redis://nochannels:pw@127.0.0.1:" + std::to_string(server.port()); }
  const RedisServer& server;
};

struct Sink : detail::WakeSink {
  void granted(const std::string& member, std::uint64_t fence) override {
    const std::lock_guard<std::mutex> lk(mu);
    grants.emplace_back(member, fence);
    cv.notify_all();
  }
  void recheck(const std::string* name) override {
    const std::lock_guard<std::mutex> lk(mu);
    rechecks.push_back(name ? *name : "*");
    cv.notify_all();
  }
  template <class Pred>
  bool wait_for(Pred pred) {
    std::unique_lock<std::mutex> lk(mu);
    return cv.wait_for(lk, std::chrono::seconds(10), pred);
  }
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::pair<std::string, std::uint64_t>> grants;
  std::vector<std::string> rechecks;
};

// A detail::Wake in sharded mode of its own, on the server at `url`.
struct ShardedSubscriber {
  ShardedSubscriber(const std::string& url, detail::WakeSink& sink)
      : srv(detail::Target{detail::parse_url(url), nullptr, milliseconds(2000), milliseconds(5000)},
            detail::ServerConfig{1, detail::ScriptWay::functions, false, {}, {}, {}}, counters, *log),
        wake(srv, config(), sink, counters, *log) {}
  static detail::WakeConfig config() {
    detail::WakeConfig c{Notify::publish, "fairlock", kCid, milliseconds(5000), false};
    c.sharded = true;
    return c;
  }
  static constexpr const char* kCid = "00000000000000e1";
  detail::Counters counters;
  std::shared_ptr<spdlog::logger> log =
      std::make_shared<spdlog::logger>("null", std::make_shared<spdlog::sinks::null_sink_mt>());
  detail::Server srv;
  detail::Wake wake;
};

// detail::Wake alone: a message on a watched shard channel is a grant; a
// refused channel tells its name's waiters to recheck, once, and is not
// asked for again when other names are subscribed, but by a new watch().
TEST(Wake, ARefusedShardChannelIsAskedForAgainOnlyByANewWatch) {
  const ChannelsDenied denied(server());
  Sink sink;
  ShardedSubscriber sub(denied.url(), sink);
  detail::Wake& wake = sub.wake;
  const std::string cid = ShardedSubscriber::kCid;
  const auto started = steady_clock::now();
  ASSERT_EQ(wake.start(), Notify::publish);
  EXPECT_LT(since(started), milliseconds(2500));  // ready once connected (no channel to confirm), not at the timeout
  ASSERT_TRUE(sink.wait_for([&] { return !sink.rechecks.empty(); }));  // every waiter, once subscribed
  {
    const std::lock_guard<std::mutex> lk(sink.mu);
    sink.rechecks.clear();
  }
  const std::string ok = unique_name("ok"), no = unique_name("no");
  ASSERT_TRUE(wake.watch(ok));
  server().cmd({"SPUBLISH", shard_channel(ok, cid), "s" + cid + ":0a:10000 42"});
  ASSERT_TRUE(sink.wait_for([&] { return !sink.grants.empty(); }));
  EXPECT_EQ(sink.grants[0], (std::pair<std::string, std::uint64_t>{"s" + cid + ":0a:10000", 42}));

  const long long refused_before = refused_ssubscribes(server());
  const auto asked = steady_clock::now();
  EXPECT_FALSE(wake.watch(no));  // refused: answered at once, not at the 5 s confirm timeout
  EXPECT_LT(since(asked), milliseconds(2500));
  EXPECT_FALSE(wake.watching(no));
  ASSERT_TRUE(sink.wait_for([&] { return !sink.rechecks.empty(); }));
  EXPECT_EQ(sink.rechecks, std::vector<std::string>{no});
  // Another name's subscription does not ask for it again.
  const std::string ok2 = unique_name("ok");
  ASSERT_TRUE(wake.watch(ok2));
  EXPECT_EQ(refused_ssubscribes(server()) - refused_before, 1);
  // A new wait on the name tries once more.
  EXPECT_FALSE(wake.watch(no));
  EXPECT_EQ(refused_ssubscribes(server()) - refused_before, 2);
  EXPECT_TRUE(wake.watching(ok));
  wake.stop();
}

// A wait's watch follows its name to another node (its slot moved): it
// leaves the old node's Wake, whose signals the wait no longer counts on,
// and subscribes on the new node's without waiting.
TEST(Wake, AWaitsWatchFollowsItsNameToAnotherNode) {
  RedisServer other;
  Sink sink;
  ShardedSubscriber a(server().url(), sink), b(other.url(), sink);
  ASSERT_EQ(a.wake.start(), Notify::publish);
  ASSERT_EQ(b.wake.start(), Notify::publish);
  const std::string name = unique_name("moving");
  const std::string channel = shard_channel(name, ShardedSubscriber::kCid);
  detail::NameWatch watch;
  ASSERT_TRUE(watch.start(a.wake, name, true));
  EXPECT_TRUE(watch.confirmed(a.wake, name));
  EXPECT_FALSE(watch.confirmed(b.wake, name));
  watch.follow(b.wake, name);
  EXPECT_FALSE(watch.confirmed(a.wake, name));
  ASSERT_TRUE(eventually([&] { return watch.confirmed(b.wake, name); }));
  EXPECT_EQ(other.cmd({"PUBSUB", "SHARDNUMSUB", channel}), channel + "\n1");
  other.cmd({"SPUBLISH", channel, "s" + std::string(ShardedSubscriber::kCid) + ":0b:10000 43"});
  ASSERT_TRUE(sink.wait_for([&] { return !sink.grants.empty(); }));
  EXPECT_EQ(sink.grants[0].second, 43u);
  watch.stop(name);
  EXPECT_FALSE(watch.confirmed(b.wake, name));
  a.wake.stop();
  b.wake.stop();
}

}  // namespace
}  // namespace fairlock::test
