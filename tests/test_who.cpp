// Who holds and who waits: each client's registration (docs/PROTOCOL.md,
// "Who: client descriptions") as Client::inspect shows it, its bounds, its
// expiry and deletion, and that it costs no round trip of its own.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <thread>

#include "child.h"
#include "test_util.h"

namespace fairlock::test {
namespace {

using namespace std::chrono_literals;

std::string this_host() {
  char buf[256] = {};
  ::gethostname(buf, sizeof buf - 1);
  return buf;
}

std::string who_key(const std::string& client_id) { return "fairlock:client:{" + client_id + "}"; }

// The value of `field` in an INFO section ("field:value" lines).
long long info_field(const RedisServer& s, const std::string& section, const std::string& field) {
  const std::string info = s.cmd({"INFO", section});
  const auto at = info.find(field + ":");
  if (at == std::string::npos) return -1;
  return std::stoll(info.substr(at + field.size() + 1));
}

TEST(Who, InspectNamesTheHolderAndTheWaiterOfOtherProcesses) {
  Client client(opts_for(server()));
  const std::string name = unique_name("who");
  Child holder({server().url(), "hold", name, "60000", "900", "nightly report --all"});
  ASSERT_EQ(holder.line().rfind("fence ", 0), 0u);
  Child waiter({server().url(), "wait", name, "900", "deploy: step 2"});
  ASSERT_TRUE(eventually([&] { return zcard(server(), name, "q") == 1; }));

  const QueueState st = client.inspect(name);
  ASSERT_EQ(st.holders.size(), 1u);
  ASSERT_EQ(st.waiters.size(), 1u);
  const HolderInfo& h = st.holders[0];
  const WaiterInfo& w = st.waiters[0];
  EXPECT_EQ(h.description, "nightly report --all");
  EXPECT_EQ(w.description, "deploy: step 2");
  EXPECT_EQ(h.host, this_host());
  EXPECT_EQ(w.host, this_host());
  EXPECT_GT(h.pid, 0);
  EXPECT_GT(w.pid, 0);
  EXPECT_NE(h.pid, w.pid);
  EXPECT_NE(h.pid, ::getpid());
  EXPECT_NE(w.pid, ::getpid());
  // The client id is the member's "<m><cid>:...": 16 hex digits.
  EXPECT_EQ(h.client_id.size(), 16u);
  EXPECT_EQ(h.token.substr(1, 16), h.client_id);
  EXPECT_EQ(w.token.substr(1, 16), w.client_id);
  EXPECT_NE(h.client_id, w.client_id);

  // The holder dies: its lease (60 s) keeps it listed; the waiter, granted
  // after an evict, exits normally and deletes its registration.
  holder.kill();
  holder.wait();
  EXPECT_EQ(client.evict(name, h.token), Evicted::holder);
  EXPECT_EQ(waiter.line().rfind("granted ", 0), 0u);
  EXPECT_EQ(waiter.wait(), 0);
  EXPECT_EQ(server().cmd({"EXISTS", who_key(w.client_id)}), "0") << "not deleted at shutdown";
}

TEST(Who, AClientWithoutDescriptionIsNamedByItsProgram) {
  Client client(opts_for(server()));
  const std::string name = unique_name("who-comm");
  FairLock lock(client, name);
  lock.lock();
  std::string comm;
  std::getline(std::ifstream("/proc/self/comm"), comm);
  const QueueState st = client.inspect(name);
  ASSERT_EQ(st.holders.size(), 1u);
  EXPECT_EQ(st.holders[0].description, comm);
  EXPECT_EQ(st.holders[0].pid, ::getpid());
  EXPECT_EQ(st.holders[0].client_id, client.id());
  lock.unlock();
}

// What `description` becomes once registered and read back by inspect.
std::string registered(const std::string& description) {
  Options o = opts_for(server());
  o.description = description;
  Client client(o);
  const std::string name = unique_name("who-bound");
  FairLock lock(client, name);
  lock.lock();
  const QueueState st = client.inspect(name);
  lock.unlock();
  return st.holders.at(0).description;
}

TEST(Who, ADescriptionIsBoundedAndCleaned) {
  EXPECT_EQ(registered(std::string(300, 'x')), std::string(200, 'x'));
  EXPECT_EQ(registered(std::string(200, 'y')), std::string(200, 'y'));
  // 'a' then 150 two-byte characters: byte 200 would split the 100th.
  std::string accents = "a";
  for (int i = 0; i < 150; ++i) accents += "\xc3\xa9";
  const std::string cut = registered(accents);
  EXPECT_EQ(cut.size(), 199u);
  EXPECT_EQ(cut, accents.substr(0, 199));
  EXPECT_EQ(registered("a\tb\nc\x7f"
                       "d e"),
            "a b c d e");
}

TEST(Who, TheRegistrationExpiresWhenItsClientIsKilled) {
  Client client(opts_for(server()));
  const std::string name = unique_name("who-kill");
  // Liveness 900 ms: the registration lives 3 s (its floor) without a refresh.
  Child holder({server().url(), "hold", name, "60000", "900", "killed"});
  ASSERT_EQ(holder.line().rfind("fence ", 0), 0u);
  const QueueState before = client.inspect(name);
  ASSERT_EQ(before.holders.size(), 1u);
  const std::string key = who_key(before.holders[0].client_id);
  EXPECT_EQ(before.holders[0].description, "killed");
  holder.kill();
  holder.wait();
  const auto killed = std::chrono::steady_clock::now();
  const long long ttl = std::stoll(server().cmd({"PTTL", key}));
  EXPECT_GT(ttl, 0) << "gone at once: it should outlive its client for a while";
  EXPECT_LE(ttl, 3000);
  ASSERT_TRUE(eventually([&] { return server().cmd({"EXISTS", key}) == "0"; }, 3000ms + 15s));
  EXPECT_GE(since(killed).count(), ttl - 50) << "expired before its TTL";
  // Its holder is still listed (lease 60 s), now without a description.
  const QueueState after = client.inspect(name);
  ASSERT_EQ(after.holders.size(), 1u);
  EXPECT_EQ(after.holders[0].client_id, before.holders[0].client_id);
  EXPECT_EQ(after.holders[0].host, "");
  EXPECT_EQ(after.holders[0].pid, 0);
  EXPECT_EQ(after.holders[0].description, "");
  client.evict(name, after.holders[0].token);
}

TEST(Who, TheRegistrationIsWrittenAtStartAndDeletedAtShutdown) {
  Options o = opts_for(server());
  o.description = "job 7";
  Client client(o);
  const std::string key = who_key(client.id());
  // "<pid> <started_ms> <host> <description>"
  const std::string value = server().cmd({"GET", key});
  const std::string pid = std::to_string(::getpid()) + " ";
  ASSERT_EQ(value.rfind(pid, 0), 0u) << value;
  const auto started_end = value.find(' ', pid.size());
  ASSERT_NE(started_end, std::string::npos) << value;
  EXPECT_GT(std::stoll(value.substr(pid.size(), started_end - pid.size())), 1700000000000LL);
  EXPECT_EQ(value.substr(started_end + 1), this_host() + " job 7");
  const long long ttl = std::stoll(server().cmd({"PTTL", key}));
  EXPECT_GT(ttl, 0);
  EXPECT_LE(ttl, 3000);  // max(3 s, 3 x 900 ms)
  client.shutdown();
  EXPECT_EQ(server().cmd({"EXISTS", key}), "0");
}

// Written with the first connection and by heartbeat rounds only: lock calls
// never write it (deleted behind the client's back, it stays away).
TEST(Who, LockCallsNeverWriteTheRegistration) {
  Client client(opts_with_slow_heartbeat(server()));  // rounds every 3.3 s
  const std::string key = who_key(client.id());
  ASSERT_EQ(server().cmd({"EXISTS", key}), "1");
  const std::string name = unique_name("who-calls");
  FairLock lock(client, name);
  ASSERT_EQ(server().cmd({"DEL", key}), "1");
  for (int i = 0; i < 50; ++i) {
    lock.lock();
    lock.unlock();
  }
  // (A call carries the refresh only when it is due: with liveness 30 s, 30 s after the last write.)
  EXPECT_EQ(server().cmd({"EXISTS", key}), "0") << "a lock call wrote the registration before it was due";
}

// A heartbeat round that carries the registration's refresh is still one
// round trip: on a server of its own, the replies the server writes (INFO
// stats total_writes_processed) match the rounds (Stats::heartbeats) while
// several refreshes (SET) and renewals (FCALL) ran. A SET of its own would
// add a reply written per refresh. The registration, deleted behind the
// client's back, is back after the next refresh.
TEST(Who, HeartbeatRoundsStayOneRoundTripWithTheRefresh) {
  RedisServer s;
  Client client(opts_for(s));  // liveness 900 ms: a round every 300 ms, a refresh every second
  FairLock lock(client, "who-rounds");
  lock.lock();
  // After the first round: it opens the heartbeat's connection (whose check
  // writes a reply of its own).
  ASSERT_TRUE(eventually([&] { return client.stats().heartbeats >= 1; }));
  ASSERT_EQ(s.cmd({"DEL", who_key(client.id())}), "1");
  const long long sets0 = command_calls(s, "set");
  const long long fcalls0 = command_calls(s, "fcall");
  // Rounds read before the server's writes at the start and after them at
  // the end: every reply written in between was counted (but the last one
  // may not be yet, and the first INFO's reply is ours).
  const auto rounds0 = static_cast<long long>(client.stats().heartbeats);
  const long long writes0 = info_field(s, "stats", "total_writes_processed");
  std::this_thread::sleep_for(std::chrono::milliseconds(env_or("WHO_WINDOW_MS", 6000)));
  const long long trips = info_field(s, "stats", "total_writes_processed") - writes0 - 1;
  const long long rounds = static_cast<long long>(client.stats().heartbeats) - rounds0;
  const long long fcalls = command_calls(s, "fcall") - fcalls0;
  const long long sets = command_calls(s, "set") - sets0;
  std::cout << "[figures] " << rounds << " heartbeat rounds, " << fcalls << " heartbeat calls, " << sets
            << " refreshes, " << trips << " replies written to the client" << std::endl;
  EXPECT_GE(rounds, 3);
  EXPECT_GE(sets, 3) << "fewer refreshes than expected in 6 s";
  EXPECT_LE(sets, rounds);
  EXPECT_LE(trips, rounds + 1) << "a refresh took a round trip of its own";
  EXPECT_GE(trips, rounds - 2);
  EXPECT_GE(fcalls, rounds - 1);
  EXPECT_EQ(s.cmd({"EXISTS", who_key(client.id())}), "1") << "not written again by a refresh";
  lock.unlock();
}

// A client idle longer than its registration's expiry (max(3 s, 3 x
// liveness)) has no registration left: heartbeat rounds, the only refresh,
// run only while it holds or waits. Its next holder must still be named.
TEST(Who, AHolderOfAClientIdleLongerThanTheExpiryIsNamed) {
  Options o = opts_for(server());
  o.liveness_ttl = 300ms;  // expiry: 3 s
  o.description = "idle then busy";
  Client client(o);
  FairLock lock(client, unique_name("idle-who"));
  std::this_thread::sleep_for(3500ms);  // the registration expires
  lock.lock();
  const QueueState st = client.inspect(lock.name());
  ASSERT_EQ(st.holders.size(), 1u);
  EXPECT_EQ(st.holders[0].description, "idle then busy") << "no registration while the client holds";
  lock.unlock();
}

}  // namespace
}  // namespace fairlock::test
