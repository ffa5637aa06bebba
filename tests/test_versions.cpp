// Protocol versions meeting on one name: versions 1 and 2's scripts (kept
// as fixtures in tests/support/v1_lua and v2_lua, exactly as they shipped)
// against this version's (3), on the same keys. A mixed fleet must fail loudly, never run two
// queues, and never let fences go back.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "fairlock/errors.h"
#include "fairlock/fair_lock.h"
#include "fairlock_lua.h"
#include "protocol.h"
#include "redis_server.h"
#include "test_util.h"

namespace fairlock::test {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  if (text.str().empty()) throw std::runtime_error("cannot read " + path);
  return text.str();
}

// A script as Redis runs it: the prelude, a newline, the operation.
std::string old_script(const std::string& dir, const std::string& op) {
  return read_file(dir + "/lib.lua") + "\n" + read_file(dir + "/" + op + ".lua");
}

std::string v3_script(const std::string& op) {
  for (const auto& s : detail::lua::kScripts) {
    if (s.name == op) return std::string(s.source);
  }
  throw std::runtime_error("no script " + op);
}

std::string member(int i) {
  char tok[33];
  std::snprintf(tok, sizeof tok, "%032x", i);
  return std::string("n00000000000000aa:") + tok;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

class Versions : public ::testing::Test {
 protected:
  std::string run(const std::string& source, std::vector<std::string> args) {
    std::vector<std::string> argv{"EVAL", source, "5", keys.q, keys.w, keys.h, keys.g, keys.seq};
    argv.insert(argv.end(), args.begin(), args.end());
    return server().cmd(argv);
  }
  std::string acquire(const std::string& source, int m) { return run(source, {member(m), "1", "10000", "10000", "q"}); }
  std::string release(const std::string& source, int m) { return run(source, {member(m), "1"}); }
  // Every key of the name with its content, to show that nothing changed.
  std::string dump() {
    std::string out;
    for (const auto& [k, read] : {std::pair{keys.q, "ZRANGE"}, {keys.w, "ZRANGE"}, {keys.h, "ZRANGE"}}) {
      out += k + "=" + server().cmd({read, k, "0", "-1", "WITHSCORES"}) + ";";
    }
    out += server().cmd({"HGETALL", keys.g}) + ";";
    const std::string type = server().cmd({"TYPE", keys.seq});
    out += type + ":" + (type == "hash" ? server().cmd({"HGETALL", keys.seq}) : server().cmd({"GET", keys.seq}));
    return out;
  }

  std::string name = unique_name("versions");
  detail::Keys keys{"fairlock", name};
  const std::string v1_acquire = old_script(FAIRLOCK_V1_LUA_DIR, "acquire");
  const std::string v1_release = old_script(FAIRLOCK_V1_LUA_DIR, "release");
  const std::string v2_acquire = old_script(FAIRLOCK_V2_LUA_DIR, "acquire");
  const std::string v2_release = old_script(FAIRLOCK_V2_LUA_DIR, "release");
  const std::string v3_acquire = v3_script("acquire"), v3_release = v3_script("release");
};

TEST_F(Versions, AVersion1ClientFailsOnAVersion3NameAndChangesNothing) {
  ASSERT_EQ(lines(acquire(v3_acquire, 1))[0], "1");  // held inline, in the record
  const std::string uncontended = dump();
  EXPECT_NE(acquire(v1_acquire, 2).find("WRONGTYPE"), std::string::npos);
  EXPECT_EQ(dump(), uncontended);
  ASSERT_EQ(lines(acquire(v3_acquire, 3))[0], "0");  // a queue: h, g, q and w
  const std::string contended = dump();
  EXPECT_NE(acquire(v1_acquire, 2).find("WRONGTYPE"), std::string::npos);
  EXPECT_EQ(dump(), contended);
}

TEST_F(Versions, AVersion3ClientCarriesABusyVersion1QueueOn) {
  const auto held = lines(acquire(v1_acquire, 1));
  const auto queued = lines(acquire(v1_acquire, 2));
  ASSERT_EQ(held[0], "1");
  ASSERT_EQ(queued[0], "0");
  ASSERT_EQ(server().cmd({"TYPE", keys.seq}), "string");
  const auto newcomer = lines(acquire(v3_acquire, 3));  // the counter becomes the record
  ASSERT_EQ(newcomer[0], "0");
  EXPECT_GT(std::stoull(newcomer[1]), std::stoull(queued[1]));
  EXPECT_EQ(newcomer[2], "1");                                     // behind version 1's waiter
  EXPECT_EQ(server().cmd({"HMGET", keys.seq, "v", "p"}), "3\n1");  // g's permit count moved into it
  EXPECT_EQ(server().cmd({"HEXISTS", keys.g, "permits"}), "0");
  // Version 1's holder and waiter still work on the shared q, w, h and g.
  EXPECT_EQ(release(v1_release, 1), "1");
  EXPECT_EQ(lines(acquire(v1_acquire, 2)), (std::vector<std::string>{"1", queued[1]}));
  EXPECT_EQ(release(v1_release, 2), "1");
  EXPECT_EQ(lines(acquire(v3_acquire, 3)), (std::vector<std::string>{"1", newcomer[1]}));
  EXPECT_EQ(release(v3_release, 3), "1");
  EXPECT_EQ(server().cmd({"EXISTS", keys.q, keys.w, keys.h, keys.g}), "0");
}

TEST_F(Versions, AVersion2ClientFailsOnAVersion3NameAndChangesNothing) {
  ASSERT_EQ(lines(acquire(v3_acquire, 1))[0], "1");  // held inline, in the record
  const std::string uncontended = dump();
  EXPECT_EQ(acquire(v2_acquire, 2).rfind("ERR:FLVERSION 3", 0), 0u);
  EXPECT_EQ(release(v2_release, 1).rfind("ERR:FLVERSION 3", 0), 0u);
  EXPECT_EQ(dump(), uncontended);
  ASSERT_EQ(lines(acquire(v3_acquire, 3))[0], "0");  // a queue: h, g, q and w
  const std::string contended = dump();
  EXPECT_EQ(acquire(v2_acquire, 2).rfind("ERR:FLVERSION 3", 0), 0u);
  EXPECT_EQ(release(v2_release, 1).rfind("ERR:FLVERSION 3", 0), 0u);
  EXPECT_EQ(dump(), contended);
}

// Version 2 kept the permit count and x in g; version 3 keeps them in the
// record. A version 3 call moves them, and the queue goes on in its order;
// version 2's clients fail from then on (FLVERSION), so their entries end by
// their deadlines or by eviction.
TEST_F(Versions, AVersion3ClientCarriesABusyVersion2QueueOn) {
  const auto held = lines(run(v2_acquire, {member(1), "2", "10000", "10000", "q"}));
  ASSERT_EQ(lines(run(v2_acquire, {member(2), "2", "10000", "10000", "q"}))[0], "1");
  const auto queued = lines(run(v2_acquire, {member(3), "2", "10000", "10000", "q"}));
  ASSERT_EQ(held[0], "1");
  ASSERT_EQ(queued[0], "0");
  const std::string x = server().cmd({"HGET", keys.g, "x"});
  ASSERT_EQ(server().cmd({"HGET", keys.g, "permits"}), "2");
  const auto newcomer = lines(run(v3_acquire, {member(4), "2", "10000", "10000", "q"}));
  ASSERT_EQ(newcomer[0], "0");
  EXPECT_GT(std::stoull(newcomer[1]), std::stoull(queued[1]));
  EXPECT_EQ(newcomer[2], "1");  // behind version 2's waiter
  EXPECT_EQ(server().cmd({"HMGET", keys.seq, "v", "p", "x"}), "3\n2\n" + x);
  EXPECT_EQ(server().cmd({"HMGET", keys.g, "permits", "x"}), "(nil)\n(nil)");
  EXPECT_EQ(run(v3_acquire, {member(4), "1", "10000", "10000", "q"}), "ERR:FLPERMITS 2");  // the count moved
  EXPECT_EQ(release(v2_release, 1).rfind("ERR:FLVERSION 3", 0), 0u);
  // The operator evicts version 2's holders: the permits go to the queue in order.
  for (int m : {1, 2}) EXPECT_EQ(run(v3_script("evict"), {member(m), "2"}), "1");
  const auto heads = lines(run(v3_script("heartbeat"), {"2", "10000", member(3), "10000", member(4), "10000"}));
  EXPECT_EQ(heads, (std::vector<std::string>{"2", queued[1], "2", newcomer[1]}));
  EXPECT_EQ(run(v3_release, {member(3), "2"}), "1");
  EXPECT_EQ(run(v3_release, {member(4), "2"}), "1");
  EXPECT_EQ(server().cmd({"EXISTS", keys.q, keys.w, keys.h, keys.g}), "0");
  EXPECT_EQ(server().cmd({"HMGET", keys.seq, "p", "x"}), "(nil)\n(nil)");
}

TEST_F(Versions, AnIdleOlderNameKeepsItsFencesIncreasing) {
  const std::vector<std::pair<std::string, std::string>> older = {{v1_acquire, v1_release}, {v2_acquire, v2_release}};
  for (std::size_t v = 0; v < older.size(); ++v) {
    server().cmd({"DEL", keys.seq});
    const auto last = lines(acquire(older[v].first, 1));
    ASSERT_EQ(release(older[v].second, 1), "1") << "version " << v + 1;
    const auto next = lines(acquire(v3_acquire, 2));
    ASSERT_EQ(next[0], "1");
    EXPECT_GT(std::stoull(next[1]), std::stoull(last[1])) << "version " << v + 1;
    EXPECT_EQ(server().cmd({"HGET", keys.seq, "v"}), "3");
    ASSERT_EQ(release(v3_release, 2), "1");
  }
}

TEST_F(Versions, AnotherVersionIsRefusedByEveryScriptAndNothingChanges) {
  server().cmd({"HSET", keys.seq, "v", "4", "s", "100", "layout", "unknown to version 3"});
  server().cmd({"ZADD", keys.q, "50", member(9)});
  const std::string before = dump();
  const std::vector<std::pair<std::string, std::vector<std::string>>> calls = {
      {"acquire", {member(1), "1", "10000", "10000", "q"}},
      {"acquire", {member(1), "1", "10000", "10000", "t"}},
      {"release", {member(1), "1"}},
      {"cancel", {member(1), "1"}},
      {"heartbeat", {"1", "10000", member(1), "10000"}},
      {"evict", {member(9), "1"}},
      {"inspect", {"10"}}};
  for (const auto& [op, args] : calls) {
    EXPECT_EQ(run(v3_script(op), args).rfind("ERR:FLVERSION 4", 0), 0u) << op;
    EXPECT_EQ(dump(), before) << op;
  }
  Client client(opts_for(server()));
  FairLock lock(client, name);
  EXPECT_THROW(lock.lock(), ProtocolMismatch);
  EXPECT_THROW(client.inspect(name), ProtocolMismatch);
  EXPECT_EQ(dump(), before);
}

}  // namespace
}  // namespace fairlock::test
