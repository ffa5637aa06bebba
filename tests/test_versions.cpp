// Protocol versions meeting on one name: versions 1 to 7's scripts (kept
// as fixtures in tests/fixtures/v1_lua to v7_lua, exactly as they shipped)
// against this version's (8), on the same keys. A mixed fleet must
// fail loudly, never run two queues, and never let fences go back. Version 8
// upgrades a name of versions 5 to 7 in place, takes over one of versions 1
// to 4 only when it is idle, and refuses it busy (docs/PROTOCOL.md §10).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "fairlock/errors.h"
#include "fairlock/fair_lock.h"
#include "fairlock_lua.h"
#include "protocol/keys.h"
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

bool is_current(const std::string& source) {
  const auto& all = detail::lua::kScripts;
  return std::any_of(std::begin(all), std::end(all), [&](const auto& s) { return s.source == source; });
}

std::string current_script(const std::string& op) {
  for (const auto& s : detail::lua::kScripts) {
    if (s.name == op) return std::string(s.source);
  }
  throw std::runtime_error("no script " + op);
}

// Processes (cids): member(i) is process A's (kCidA) unless told otherwise.
const std::string kCidA = "00000000000000aa";
const std::string kCidB = "00000000000000bb";
const std::string kCidC = "00000000000000cc";

// The process of a member "<m><cid>:<token>" (its key in w since version 4).
std::string proc(const std::string& cid) { return "n" + cid; }

std::string member(int i, const std::string& cid = kCidA) {
  char tok[33];
  std::snprintf(tok, sizeof tok, "%032x", i);
  return proc(cid) + ":" + tok;
}

// The same member in version 6's form, naming a lease of 10 s.
std::string leased(int i, const std::string& cid = kCidA) { return member(i, cid) + ":10000"; }

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// A heartbeat reply (version 6 and later) without its ms figures: the status and value
// of each member, as version 5 replied.
std::vector<std::string> without_ms(const std::vector<std::string>& r) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < r.size(); ++i) {
    if (i % 3 != 2) out.push_back(r[i]);
  }
  return out;
}

// A granted reply's status and fence (version 6 added the remaining ms).
std::vector<std::string> grant_of(const std::vector<std::string>& r) {
  return std::vector<std::string>(r.begin(),
                                  r.begin() + static_cast<std::ptrdiff_t>(std::min<std::size_t>(2, r.size())));
}

class Versions : public ::testing::Test {
 protected:
  // Today's scripts and version 7's take seven keys (ev since version 7), versions 5 and 6's
  // six (o since version 5), older ones five.
  std::string run(const std::string& source, std::vector<std::string> args) {
    std::vector<std::string> argv{"EVAL", source, "5", keys.q, keys.w, keys.h, keys.g, keys.seq};
    const bool v7 = source.rfind(v7_lib, 0) == 0;
    if (is_current(source) || v7 || source.rfind(v5_lib, 0) == 0 || source.rfind(v6_lib, 0) == 0) {
      argv[2] = "6";
      argv.push_back(keys.o);
    }
    if (is_current(source) || v7) {
      argv[2] = "7";
      argv.push_back(keys.ev);
    }
    argv.insert(argv.end(), args.begin(), args.end());
    return server().cmd(argv);
  }
  std::string acquire(const std::string& source, int m) { return run(source, {member(m), "1", "10000", "10000", "q"}); }
  std::string release(const std::string& source, int m) { return run(source, {member(m), "1"}); }
  // acquire of one permit with a given liveness (ARGV 4), lease 10 s, mode "q".
  std::vector<std::string> queue(const std::string& source, const std::string& m, const std::string& liveness_ms) {
    return lines(run(source, {m, "1", "10000", liveness_ms, "q"}));
  }
  // Every key of the name with its content, to show that nothing changed.
  std::string dump() {
    std::string out;
    for (const auto& [k, read] : {std::pair{keys.q, "ZRANGE"}, {keys.w, "ZRANGE"}, {keys.h, "ZRANGE"}}) {
      out += k + "=" + server().cmd({read, k, "0", "-1", "WITHSCORES"}) + ";";
    }
    out += server().cmd({"HGETALL", keys.g}) + ";" + server().cmd({"GET", keys.o}) + ";";
    out += server().cmd({"ZRANGE", keys.ev, "0", "-1", "WITHSCORES"}) + ";";
    const std::string type = server().cmd({"TYPE", keys.seq});
    out += type + ":" + (type == "hash" ? server().cmd({"HGETALL", keys.seq}) : server().cmd({"GET", keys.seq}));
    return out;
  }
  // Every version 8 script, and the C++ client's lock and inspect, refuse
  // the name with FLVERSION <v> (ProtocolMismatch) and change nothing.
  void all_refused(const std::string& v, const std::string& when) {
    const std::string before = dump();
    const std::vector<std::pair<std::string, std::vector<std::string>>> calls = {
        {"acquire", {leased(5), "1", "10000", "10000", "f"}},
        {"acquire", {leased(1), "1", "10000", "10000", "q"}},
        {"acquire", {leased(5), "1", "10000", "10000", "t"}},
        {"release", {member(1), "1"}},
        {"cancel", {member(2), "1"}},
        {"heartbeat", {"1", "10000", member(2), "10000"}},
        {"evict", {member(1), "1"}},
        {"inspect", {"10"}}};
    for (const auto& [op, args] : calls) {
      EXPECT_EQ(run(current_script(op), args).rfind("ERR:FLVERSION " + v + ": ", 0), 0u) << when << op;
      EXPECT_EQ(dump(), before) << when << op;
    }
    Client client(opts_for(server()));
    FairLock lock(client, name);
    EXPECT_THROW(lock.lock(), ProtocolMismatch) << when;
    EXPECT_THROW(client.inspect(name), ProtocolMismatch) << when;
    EXPECT_EQ(dump(), before) << when;
  }

  const std::string a1 = member(1, kCidA), a2 = member(2, kCidA), b3 = member(3, kCidB);
  std::string name = unique_name("versions");
  detail::Keys keys{"fairlock", name};
  const std::string v1_acquire = old_script(FAIRLOCK_V1_LUA_DIR, "acquire");
  const std::string v1_release = old_script(FAIRLOCK_V1_LUA_DIR, "release");
  const std::string v2_acquire = old_script(FAIRLOCK_V2_LUA_DIR, "acquire");
  const std::string v2_release = old_script(FAIRLOCK_V2_LUA_DIR, "release");
  const std::string v3_acquire = old_script(FAIRLOCK_V3_LUA_DIR, "acquire");
  const std::string v3_release = old_script(FAIRLOCK_V3_LUA_DIR, "release");
  const std::string v3_heartbeat = old_script(FAIRLOCK_V3_LUA_DIR, "heartbeat");
  const std::string v8_acquire = current_script("acquire"), v8_release = current_script("release");
  const std::string v8_heartbeat = current_script("heartbeat");
  const std::string v4_acquire = old_script(FAIRLOCK_V4_LUA_DIR, "acquire");
  const std::string v4_release = old_script(FAIRLOCK_V4_LUA_DIR, "release");
  const std::string v5_lib = read_file(std::string(FAIRLOCK_V5_LUA_DIR) + "/lib.lua");
  const std::string v5_acquire = old_script(FAIRLOCK_V5_LUA_DIR, "acquire");
  const std::string v5_release = old_script(FAIRLOCK_V5_LUA_DIR, "release");
  const std::string v5_heartbeat = old_script(FAIRLOCK_V5_LUA_DIR, "heartbeat");
  const std::string v6_lib = read_file(std::string(FAIRLOCK_V6_LUA_DIR) + "/lib.lua");
  const std::string v6_acquire = old_script(FAIRLOCK_V6_LUA_DIR, "acquire");
  const std::string v6_release = old_script(FAIRLOCK_V6_LUA_DIR, "release");
  const std::string v6_heartbeat = old_script(FAIRLOCK_V6_LUA_DIR, "heartbeat");
  const std::string v7_lib = read_file(std::string(FAIRLOCK_V7_LUA_DIR) + "/lib.lua");
  const std::string v7_acquire = old_script(FAIRLOCK_V7_LUA_DIR, "acquire");
  const std::string v7_release = old_script(FAIRLOCK_V7_LUA_DIR, "release");
  const std::string v7_heartbeat = old_script(FAIRLOCK_V7_LUA_DIR, "heartbeat");
};

TEST_F(Versions, AVersion1ClientFailsOnAVersion8NameAndChangesNothing) {
  ASSERT_EQ(lines(acquire(v8_acquire, 1))[0], "1");  // held inline, in o
  const std::string uncontended = dump();
  EXPECT_NE(acquire(v1_acquire, 2).find("WRONGTYPE"), std::string::npos);
  EXPECT_EQ(dump(), uncontended);
  ASSERT_EQ(lines(acquire(v8_acquire, 3))[0], "0");  // a queue: h, g, q and w
  const std::string contended = dump();
  EXPECT_NE(acquire(v1_acquire, 2).find("WRONGTYPE"), std::string::npos);
  EXPECT_EQ(dump(), contended);
}

TEST_F(Versions, AVersion2ClientFailsOnAVersion8NameAndChangesNothing) {
  ASSERT_EQ(lines(acquire(v8_acquire, 1))[0], "1");  // held inline, in o
  const std::string uncontended = dump();
  EXPECT_EQ(acquire(v2_acquire, 2).rfind("ERR:FLVERSION 8", 0), 0u);
  EXPECT_EQ(release(v2_release, 1).rfind("ERR:FLVERSION 8", 0), 0u);
  EXPECT_EQ(dump(), uncontended);
  ASSERT_EQ(lines(acquire(v8_acquire, 3))[0], "0");  // a queue: h, g, q and w
  const std::string contended = dump();
  EXPECT_EQ(acquire(v2_acquire, 2).rfind("ERR:FLVERSION 8", 0), 0u);
  EXPECT_EQ(release(v2_release, 1).rfind("ERR:FLVERSION 8", 0), 0u);
  EXPECT_EQ(dump(), contended);
}

TEST_F(Versions, AVersion3ClientFailsOnAVersion8NameAndChangesNothing) {
  ASSERT_EQ(lines(acquire(v8_acquire, 1))[0], "1");  // held inline, in o
  const std::string uncontended = dump();
  EXPECT_EQ(acquire(v3_acquire, 2).rfind("ERR:FLVERSION 8", 0), 0u);
  EXPECT_EQ(release(v3_release, 1).rfind("ERR:FLVERSION 8", 0), 0u);
  EXPECT_EQ(run(v3_heartbeat, {"1", "10000", member(1), "10000"}).rfind("ERR:FLVERSION 8", 0), 0u);
  EXPECT_EQ(dump(), uncontended);
  ASSERT_EQ(lines(acquire(v8_acquire, 3))[0], "0");  // a queue: h, g, q and w
  const std::string contended = dump();
  EXPECT_EQ(acquire(v3_acquire, 2).rfind("ERR:FLVERSION 8", 0), 0u);
  EXPECT_EQ(acquire(v3_acquire, 3).rfind("ERR:FLVERSION 8", 0), 0u);
  EXPECT_EQ(release(v3_release, 1).rfind("ERR:FLVERSION 8", 0), 0u);
  EXPECT_EQ(run(v3_heartbeat, {"1", "10000", member(3), "10000"}).rfind("ERR:FLVERSION 8", 0), 0u);
  EXPECT_EQ(dump(), contended);
}

// An idle name of versions 1 to 6 (only its record left) goes on under
// version 8, its fences still increasing.
TEST_F(Versions, AnIdleOlderNameKeepsItsFencesIncreasing) {
  const std::vector<std::pair<std::string, std::string>> older = {{v1_acquire, v1_release}, {v2_acquire, v2_release},
                                                                  {v3_acquire, v3_release}, {v4_acquire, v4_release},
                                                                  {v5_acquire, v5_release}, {v6_acquire, v6_release}};
  for (std::size_t v = 0; v < older.size(); ++v) {
    server().cmd({"DEL", keys.seq});
    const auto last = lines(acquire(older[v].first, 1));
    ASSERT_EQ(release(older[v].second, 1), "1") << "version " << v + 1;
    const std::string idle = dump();  // inspect reads an idle older name, and writes nothing
    const auto listed = lines(run(current_script("inspect"), {"10"}));
    ASSERT_GE(listed.size(), 5u) << "version " << v + 1;
    EXPECT_EQ(listed[2], last[1]) << "version " << v + 1;  // its last ticket; no holder, no waiter
    EXPECT_EQ(listed[3] + listed[4], "00") << "version " << v + 1;
    EXPECT_EQ(dump(), idle) << "version " << v + 1;
    const auto next = lines(acquire(v8_acquire, 2));
    ASSERT_EQ(next[0], "1");
    EXPECT_GT(std::stoull(next[1]), std::stoull(last[1])) << "version " << v + 1;
    EXPECT_EQ(server().cmd({"HGET", keys.seq, "v"}), "8");
    ASSERT_EQ(release(v8_release, 2), "1");
  }
}

// Every version 4 script fails on a version 8 name, held inline or busy,
// and changes nothing.
TEST_F(Versions, AVersion4ClientFailsOnAVersion8NameAndChangesNothing) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> calls = {
      {"acquire", {member(2), "1", "10000", "10000", "q"}},
      {"acquire", {member(1), "1", "10000", "10000", "t"}},
      {"release", {member(1), "1"}},
      {"cancel", {member(3), "1"}},
      {"heartbeat", {"1", "10000", member(1), "10000"}},
      {"evict", {member(1), "1"}},
      {"inspect", {"10"}}};
  auto all_refused = [&](const char* when) {
    const std::string before = dump();
    for (const auto& [op, args] : calls) {
      EXPECT_EQ(run(old_script(FAIRLOCK_V4_LUA_DIR, op), args).rfind("ERR:FLVERSION 8", 0), 0u) << when << op;
      EXPECT_EQ(dump(), before) << when << op;
    }
  };
  ASSERT_EQ(lines(acquire(v8_acquire, 1))[0], "1");  // held inline, in o
  all_refused("uncontended: ");
  ASSERT_EQ(lines(acquire(v8_acquire, 3))[0], "0");  // a queue: h, g, q and w
  all_refused("contended: ");
}

// Versions 1 to 4 kept other layouts (a STRING record, the permit count in
// g, w by member, the inline holder in the record). A name one of them keeps
// busy (a holder, a queue) is refused by version 8 and nothing changes; once
// that version's clients drain it, version 8 takes it over, its fences still
// increasing.
TEST_F(Versions, ABusyVersion1To4NameIsRefusedUntilItsClientsDrainIt) {
  const std::vector<std::pair<std::string, std::string>> older = {
      {FAIRLOCK_V1_LUA_DIR, "1"}, {FAIRLOCK_V2_LUA_DIR, "2"}, {FAIRLOCK_V3_LUA_DIR, "3"}, {FAIRLOCK_V4_LUA_DIR, "4"}};
  for (const auto& [dir, v] : older) {
    server().cmd({"DEL", keys.q, keys.w, keys.h, keys.g, keys.seq, keys.o, keys.ev});
    const std::string old_acquire = old_script(dir, "acquire"), old_release = old_script(dir, "release");
    const auto held = lines(acquire(old_acquire, 1));  // in h (version 1), else inline in the record
    ASSERT_EQ(held[0], "1") << v;
    all_refused(v, "version " + v + ", held: ");
    const auto queued = lines(acquire(old_acquire, 2));  // a queue
    ASSERT_EQ(queued[0], "0") << v;
    all_refused(v, "version " + v + ", queued: ");
    ASSERT_EQ(release(old_release, 1), "1") << v;  // handed on to 2: still busy
    all_refused(v, "version " + v + ", handed on: ");
    ASSERT_EQ(release(old_release, 2), "1") << v;  // idle: only the record is left
    const auto next = lines(acquire(v8_acquire, 3));
    ASSERT_EQ(next[0], "1") << v;
    EXPECT_GT(std::stoull(next[1]), std::stoull(queued[1])) << v;
    EXPECT_EQ(server().cmd({"HGET", keys.seq, "v"}), "8") << v;
    EXPECT_EQ(release(v8_release, 3), "1") << v;
  }
}

// A version 4 inline holder whose deadline passed is not moved: the next
// call grants the name afresh, above its fence.
TEST_F(Versions, AnExpiredVersion4InlineHolderIsNotMoved) {
  const auto held = lines(acquire(v4_acquire, 1));
  ASSERT_EQ(held[0], "1");
  server().cmd({"HSET", keys.seq, "d", "1"});  // its deadline passed (no test waits for a clock)
  const auto next = lines(acquire(v8_acquire, 3));
  ASSERT_EQ(next[0], "1");
  EXPECT_GT(std::stoull(next[1]), std::stoull(held[1]));
  EXPECT_EQ(server().cmd({"GET", keys.o}).substr(0, member(3).size()), member(3));
  EXPECT_EQ(release(v8_release, 1), "0");
  EXPECT_EQ(release(v8_release, 3), "1");
}

// A version 4 inline holder whose deadline is corrupt (far beyond any
// lease: only tampering writes one) counts as passed, as everywhere: the
// name is idle, and version 8 takes it over and grants it afresh.
TEST_F(Versions, ACorruptVersion4InlineDeadlineCountsAsPassed) {
  const auto held = lines(acquire(v4_acquire, 1));
  ASSERT_EQ(held[0], "1");
  server().cmd({"HSET", keys.seq, "d", "1e300"});
  const auto next = lines(acquire(v8_acquire, 3));
  ASSERT_EQ(next[0], "1");
  EXPECT_GT(std::stoull(next[1]), std::stoull(held[1]));
  EXPECT_EQ(server().cmd({"HMGET", keys.seq, "v", "o", "d", "t"}), "8\n(nil)\n(nil)\n(nil)");
  EXPECT_EQ(release(v8_release, 3), "1");
}

// Every version 5 script fails on a version 8 name, held inline or busy,
// and changes nothing.
TEST_F(Versions, AVersion5ClientFailsOnAVersion8NameAndChangesNothing) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> calls = {
      {"acquire", {member(2), "1", "10000", "10000", "q"}},
      {"acquire", {member(1), "1", "10000", "10000", "t"}},
      {"cancel", {member(3), "1"}},
      {"heartbeat", {"1", "10000", member(1), "10000"}},
      {"evict", {member(3), "1"}},
      {"inspect", {"10"}}};
  auto all_refused = [&](const char* when) {
    const std::string before = dump();
    for (const auto& [op, args] : calls) {
      EXPECT_EQ(run(old_script(FAIRLOCK_V5_LUA_DIR, op), args).rfind("ERR:FLVERSION 8", 0), 0u) << when << op;
      EXPECT_EQ(dump(), before) << when << op;
    }
  };
  ASSERT_EQ(lines(run(v8_acquire, {leased(1), "1", "10000", "10000", "q"}))[0], "1");  // held inline, in o
  all_refused("uncontended: ");
  ASSERT_EQ(lines(run(v8_acquire, {leased(3), "1", "10000", "10000", "q"}))[0], "0");  // a queue
  all_refused("contended: ");
  // Version 5's release of a member it never held reads the record: refused too.
  EXPECT_EQ(run(v5_release, {member(9), "1"}).rfind("ERR:FLVERSION 8", 0), 0u);
}

// Version 5's layout is version 8's (without ev): the first version 8 call changes the
// record's "v" and nothing else, and a busy version 5 queue goes on in its
// order. Its members name no lease: a grant handed to one lasts to its
// process's liveness deadline, as under version 5.
TEST_F(Versions, AVersion8ClientCarriesABusyVersion5QueueOn) {
  ASSERT_EQ(lines(acquire(v5_acquire, 1))[0], "1");  // a1 inline
  std::map<std::string, std::string> t;
  for (const auto& m : {a2, b3}) {
    const auto q = queue(v5_acquire, m, "20000");
    ASSERT_EQ(q[0], "0") << m;
    t[m] = q[1];
  }
  ASSERT_EQ(server().cmd({"HGET", keys.seq, "v"}), "5");
  const auto written = [&] {  // what version 5 wrote for its holder and waiters
    return server().cmd({"ZRANGE", keys.h, "0", "-1", "WITHSCORES"}) + ";" + server().cmd({"HGETALL", keys.g}) + ";" +
           server().cmd({"ZSCORE", keys.w, proc(kCidA)}) + ";" + server().cmd({"ZSCORE", keys.w, proc(kCidB)});
  };
  const std::string v5_entries = written();
  const std::string newcomer = leased(5, kCidC);
  const auto t5 = queue(v8_acquire, newcomer, "10000");
  ASSERT_EQ(t5[0], "0");
  EXPECT_EQ(t5[2], "2");  // behind version 5's waiters
  EXPECT_GT(std::stoull(t5[1]), std::stoull(t[b3]));
  EXPECT_EQ(server().cmd({"HGET", keys.seq, "v"}), "8");
  // Everything version 5 wrote stands: its holder, its waiters, their w entries.
  EXPECT_EQ(server().cmd({"ZRANGE", keys.q, "0", "-1"}), a2 + "\n" + b3 + "\n" + newcomer);
  EXPECT_EQ(written(), v5_entries);
  // Version 5's clients fail from now on, and change nothing.
  const std::string before = dump();
  EXPECT_EQ(run(v5_release, {a1, "1"}).rfind("ERR:FLVERSION 8", 0), 0u);
  EXPECT_EQ(run(v5_heartbeat, {"1", "10000", a2, "10000"}).rfind("ERR:FLVERSION 8", 0), 0u);
  EXPECT_EQ(dump(), before);
  // The queue drains in ticket order under version 8.
  EXPECT_EQ(release(v8_release, 1), "1");
  EXPECT_EQ(server().cmd({"ZSCORE", keys.h, a2}), server().cmd({"ZSCORE", keys.w, proc(kCidA)}));  // no lease: liveness
  const auto a2_beat = lines(run(v8_heartbeat, {"1", "10000", a2, "0"}));  // a check: reported, not renewed
  EXPECT_EQ(without_ms(a2_beat), (std::vector<std::string>{"2", t[a2]}));
  EXPECT_EQ(server().cmd({"ZSCORE", keys.h, a2}), server().cmd({"ZSCORE", keys.w, proc(kCidA)}));
  EXPECT_EQ(run(v8_release, {a2, "1"}), "1");
  EXPECT_EQ(grant_of(queue(v8_acquire, b3, "20000")), (std::vector<std::string>{"1", t[b3]}));
  EXPECT_EQ(run(v8_release, {b3, "1"}), "1");
  EXPECT_EQ(grant_of(queue(v8_acquire, newcomer, "10000")), (std::vector<std::string>{"1", t5[1]}));
  EXPECT_EQ(run(v8_release, {newcomer, "1"}), "1");
  EXPECT_EQ(server().cmd({"EXISTS", keys.q, keys.w, keys.h, keys.g, keys.o}), "0");
  EXPECT_EQ(server().cmd({"HGET", keys.seq, "v"}), "8");
}

// A version 5 inline holder (o, a member without a lease) keeps its grant
// under version 8: whichever version 8 call comes first upgrades the record
// and sees it held, and a contender queues behind it.
TEST_F(Versions, AVersion5InlineHolderKeepsItsGrantUnderVersion8) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> calls = {
      {"heartbeat", {"1", "10000", a1, "0"}},     // a check: o's expiry stays
      {"cancel", {a1, "1"}},                      // reports the grant
      {"acquire", {a1, "1", "1", "10000", "q"}},  // a retry: same fence, never shortened
      {"release", {a1, "1"}}};
  for (const auto& [op, args] : calls) {
    server().cmd({"DEL", keys.q, keys.w, keys.h, keys.g, keys.seq, keys.o});
    const auto held = lines(run(v5_acquire, {a1, "1", "60000", "10000", "q"}));
    ASSERT_EQ(held[0], "1");
    const std::string o = server().cmd({"GET", keys.o});
    const std::string expiry = server().cmd({"PEXPIRETIME", keys.o});
    const auto out = lines(run(current_script(op), args));
    if (op == "release") {  // its fast path reads no record (o's layout is the same)
      EXPECT_EQ(out, std::vector<std::string>{"1"});
      EXPECT_EQ(server().cmd({"EXISTS", keys.o}), "0");
      continue;
    }
    EXPECT_EQ(server().cmd({"HGET", keys.seq, "v"}), "8") << op;
    ASSERT_EQ(out.size(), 3u) << op;
    EXPECT_EQ(grant_of(out), (std::vector<std::string>{op == "acquire" ? "1" : "2", held[1]})) << op;
    EXPECT_GT(std::stoll(out[2]), 40000) << op;  // o's time left (whole seconds of slack: no clock race)
    EXPECT_LE(std::stoll(out[2]), 60000) << op;
    EXPECT_EQ(server().cmd({"GET", keys.o}), o) << op;
    EXPECT_EQ(server().cmd({"PEXPIRETIME", keys.o}), expiry) << op;
  }
  ASSERT_EQ(lines(run(v5_acquire, {a1, "1", "60000", "10000", "q"}))[0], "1");
  const auto queued = queue(v8_acquire, leased(3, kCidB), "10000");
  ASSERT_EQ(queued[0], "0");
  EXPECT_EQ(server().cmd({"ZRANGE", keys.h, "0", "-1"}), a1);  // moved into h, its member as it was
  EXPECT_EQ(release(v8_release, 1), "1");
  EXPECT_EQ(grant_of(queue(v8_acquire, leased(3, kCidB), "10000")), (std::vector<std::string>{"1", queued[1]}));
}

// Whichever version 8 script writes first upgrades a busy version 5 name:
// "v" changes, nothing else but what the call itself does.
TEST_F(Versions, EveryWritingVersion8ScriptUpgradesABusyVersion5Name) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> calls = {
      {"release", {member(9), "1"}},
      {"cancel", {member(9), "1"}},
      {"evict", {member(9), "1"}},
      {"heartbeat", {"1", "20000", member(9, kCidC), "10000"}}};
  for (const auto& [op, args] : calls) {
    server().cmd({"DEL", keys.q, keys.w, keys.h, keys.g, keys.seq, keys.o});
    ASSERT_EQ(lines(acquire(v5_acquire, 1))[0], "1") << op;
    ASSERT_EQ(lines(acquire(v5_acquire, 2))[0], "0") << op;
    std::string before = dump();
    EXPECT_EQ(run(current_script(op), args).rfind("ERR", 0), std::string::npos) << op;
    std::string after = dump();
    const auto v5 = before.find("v\n5");
    ASSERT_NE(v5, std::string::npos) << before;
    before.replace(v5, 3, "v\n8");
    EXPECT_EQ(after, before) << op;
  }
  server().cmd({"DEL", keys.seq});
  ASSERT_EQ(lines(acquire(v5_acquire, 1))[0], "1");
  const std::string before = dump();
  EXPECT_EQ(lines(run(current_script("inspect"), {"10"}))[3], "1");  // inspect reads, never writes
  EXPECT_EQ(dump(), before);
}

// Every version 6 script fails on a version 8 name, held inline or busy,
// and changes nothing; but version 6's release of an inline grant its
// member holds, whose fast path reads no record (o means the same).
TEST_F(Versions, AVersion6ClientFailsOnAVersion8NameAndChangesNothing) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> calls = {
      {"acquire", {leased(2), "1", "10000", "10000", "q"}},
      {"acquire", {leased(1), "1", "10000", "10000", "t"}},
      {"cancel", {leased(3), "1"}},
      {"heartbeat", {"1", "10000", leased(1), "10000"}},
      {"evict", {leased(3), "1"}},
      {"inspect", {"10"}}};
  auto all_refused = [&](const char* when) {
    const std::string before = dump();
    for (const auto& [op, args] : calls) {
      EXPECT_EQ(run(old_script(FAIRLOCK_V6_LUA_DIR, op), args).rfind("ERR:FLVERSION 8", 0), 0u) << when << op;
      EXPECT_EQ(dump(), before) << when << op;
    }
  };
  ASSERT_EQ(lines(run(v8_acquire, {leased(1), "1", "10000", "10000", "q"}))[0], "1");  // held inline, in o
  all_refused("uncontended: ");
  ASSERT_EQ(lines(run(v8_acquire, {leased(3), "1", "10000", "10000", "q"}))[0], "0");  // a queue
  ASSERT_EQ(run(current_script("evict"), {leased(3), "1"}), "2");                      // and ev
  ASSERT_EQ(server().cmd({"ZCARD", keys.ev}), "1");
  all_refused("contended, with an eviction: ");
  EXPECT_EQ(run(v6_release, {leased(9), "1"}).rfind("ERR:FLVERSION 8", 0), 0u);
  // An inline grant made before: version 6 releases it, without the record.
  server().cmd({"DEL", keys.q, keys.w, keys.h, keys.g, keys.seq, keys.o, keys.ev});
  ASSERT_EQ(lines(run(v8_acquire, {leased(1), "1", "10000", "10000", "q"}))[0], "1");
  EXPECT_EQ(run(v6_release, {leased(1), "1"}), "1");
  EXPECT_EQ(server().cmd({"EXISTS", keys.o}), "0");
}

// Version 6's layout is version 8's without ev: the first version 8 call
// changes the record's "v" and nothing else, and a busy version 6 queue goes
// on in its order, under version 8's rules (an evicted waiter is told so).
TEST_F(Versions, AVersion8ClientCarriesABusyVersion6QueueOn) {
  const std::string b2 = leased(2, kCidB), c3 = leased(3, kCidC);
  ASSERT_EQ(lines(run(v6_acquire, {leased(1), "1", "10000", "10000", "q"}))[0], "1");  // inline
  std::map<std::string, std::string> t;
  for (const auto& m : {b2, c3}) {
    const auto q = lines(run(v6_acquire, {m, "1", "10000", "20000", "q"}));
    ASSERT_EQ(q[0], "0") << m;
    t[m] = q[1];
  }
  ASSERT_EQ(server().cmd({"HGET", keys.seq, "v"}), "6");
  std::string before = dump();
  // A heartbeat that changes nothing but the record's version (a holder's check).
  const auto beat = lines(run(v8_heartbeat, {"1", "20000", leased(1), "0"}));
  ASSERT_EQ(grant_of(beat)[0], "2");
  const auto v6 = before.find("v\n6");
  ASSERT_NE(v6, std::string::npos) << before;
  before.replace(v6, 3, "v\n8");
  EXPECT_EQ(dump(), before);
  // Version 6's clients fail from now on.
  EXPECT_EQ(run(v6_heartbeat, {"1", "10000", b2, "10000"}).rfind("ERR:FLVERSION 8", 0), 0u);
  // The operator evicts c3: its process's next calls say so, and it is not queued again.
  EXPECT_EQ(run(current_script("evict"), {c3, "1"}), "2");
  EXPECT_EQ(lines(run(v8_heartbeat, {"1", "20000", c3, "10000"})), (std::vector<std::string>{"3", "0", "-1"}));
  EXPECT_EQ(lines(run(v8_acquire, {c3, "1", "10000", "20000", "q"})), std::vector<std::string>{"-2"});
  EXPECT_EQ(server().cmd({"ZRANGE", keys.q, "0", "-1"}), b2);
  // The queue drains in ticket order.
  EXPECT_EQ(run(v8_release, {leased(1), "1"}), "1");
  EXPECT_EQ(grant_of(lines(run(v8_acquire, {b2, "1", "10000", "20000", "q"}))), (std::vector<std::string>{"1", t[b2]}));
  EXPECT_EQ(run(v8_release, {b2, "1"}), "1");
  EXPECT_EQ(server().cmd({"EXISTS", keys.q, keys.w, keys.h, keys.g, keys.o}), "0");
  EXPECT_EQ(server().cmd({"HGET", keys.seq, "v"}), "8");
}

// Whichever version 8 script writes first upgrades a busy version 6 name:
// "v" changes, nothing else but what the call itself does.
TEST_F(Versions, EveryWritingVersion8ScriptUpgradesABusyVersion6Name) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> calls = {
      {"release", {leased(9), "1"}},
      {"cancel", {leased(9), "1"}},
      {"evict", {leased(9), "1"}},
      {"acquire", {leased(9), "1", "10000", "10000", "q"}},  // mode q: may not be granted inline
      {"heartbeat", {"1", "20000", leased(9, kCidC), "10000"}}};
  for (const auto& [op, args] : calls) {
    server().cmd({"DEL", keys.q, keys.w, keys.h, keys.g, keys.seq, keys.o});
    ASSERT_EQ(lines(run(v6_acquire, {leased(1), "1", "10000", "10000", "q"}))[0], "1") << op;
    ASSERT_EQ(lines(run(v6_acquire, {leased(2), "1", "10000", "10000", "q"}))[0], "0") << op;
    std::string before = dump();
    const std::string reply = run(current_script(op), args);
    EXPECT_EQ(reply.rfind("ERR", 0), std::string::npos) << op;
    if (op == "acquire") {  // it queued: only its own entries are new
      EXPECT_EQ(lines(reply)[0], "0");
      continue;
    }
    const auto v6 = before.find("v\n6");
    ASSERT_NE(v6, std::string::npos) << before;
    before.replace(v6, 3, "v\n8");
    EXPECT_EQ(dump(), before) << op;
  }
}

// Every version 7 script fails on a version 8 name, held inline or busy,
// and changes nothing; but version 7's release of an inline grant its
// member holds, whose fast path reads no record (o means the same).
TEST_F(Versions, AVersion7ClientFailsOnAVersion8NameAndChangesNothing) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> calls = {
      {"acquire", {leased(2), "1", "10000", "10000", "q"}},
      {"acquire", {leased(1), "1", "10000", "10000", "t"}},
      {"cancel", {leased(3), "1"}},
      {"heartbeat", {"1", "10000", leased(1), "10000"}},
      {"evict", {leased(3), "1"}},
      {"inspect", {"10"}}};
  auto all_refused = [&](const char* when) {
    const std::string before = dump();
    for (const auto& [op, args] : calls) {
      EXPECT_EQ(run(old_script(FAIRLOCK_V7_LUA_DIR, op), args).rfind("ERR:FLVERSION 8", 0), 0u) << when << op;
      EXPECT_EQ(dump(), before) << when << op;
    }
  };
  ASSERT_EQ(lines(run(v8_acquire, {leased(1), "1", "10000", "10000", "q"}))[0], "1");  // held inline, in o
  all_refused("uncontended: ");
  ASSERT_EQ(lines(run(v8_acquire, {leased(3), "1", "10000", "10000", "q"}))[0], "0");  // a queue
  ASSERT_EQ(run(current_script("evict"), {leased(3), "1"}), "2");                      // and ev
  all_refused("contended, with an eviction: ");
  EXPECT_EQ(run(v7_release, {leased(9), "1"}).rfind("ERR:FLVERSION 8", 0), 0u);
  // An inline grant made before: version 7 releases it, without the record.
  server().cmd({"DEL", keys.q, keys.w, keys.h, keys.g, keys.seq, keys.o, keys.ev});
  ASSERT_EQ(lines(run(v8_acquire, {leased(1), "1", "10000", "10000", "q"}))[0], "1");
  EXPECT_EQ(run(v7_release, {leased(1), "1"}), "1");
  EXPECT_EQ(server().cmd({"EXISTS", keys.o}), "0");
}

// Version 8 adds the member mode 's' (a shard channel's SPUBLISH), which
// version 7 refuses as any malformed member: a version 7 client never sends
// it, and cannot take part in a sharded client's queue by mistake.
TEST_F(Versions, OnlyVersion8TakesAShardedMember) {
  const std::string sharded = "s" + kCidA + ":" + std::string(24, '1') + ":10000";
  EXPECT_EQ(run(v7_acquire, {sharded, "1", "10000", "10000", "q"}).rfind("ERR:FLBADARG", 0), 0u);
  EXPECT_EQ(server().cmd({"EXISTS", keys.seq}), "0");
  EXPECT_EQ(lines(run(v8_acquire, {sharded, "1", "10000", "10000", "q"}))[0], "1");
  EXPECT_EQ(run(v8_release, {sharded, "1"}), "1");
}

// Version 7's layout is version 8's: the first version 8 call changes the
// record's "v" and nothing else, and a busy version 7 queue goes on in its
// order, its evictions remembered.
TEST_F(Versions, AVersion8ClientCarriesABusyVersion7QueueOn) {
  const std::string b2 = leased(2, kCidB), c3 = leased(3, kCidC);
  ASSERT_EQ(lines(run(v7_acquire, {leased(1), "1", "10000", "10000", "q"}))[0], "1");  // inline
  std::map<std::string, std::string> t;
  for (const auto& m : {b2, c3}) {
    const auto q = lines(run(v7_acquire, {m, "1", "10000", "20000", "q"}));
    ASSERT_EQ(q[0], "0") << m;
    t[m] = q[1];
  }
  ASSERT_EQ(run(old_script(FAIRLOCK_V7_LUA_DIR, "evict"), {c3, "1"}), "2");  // ev, kept by version 7
  ASSERT_EQ(server().cmd({"HGET", keys.seq, "v"}), "7");
  std::string before = dump();
  // A heartbeat that changes nothing but the record's version (a holder's check).
  const auto beat = lines(run(v8_heartbeat, {"1", "20000", leased(1), "0"}));
  ASSERT_EQ(grant_of(beat)[0], "2");
  const auto v7 = before.find("v\n7");
  ASSERT_NE(v7, std::string::npos) << before;
  before.replace(v7, 3, "v\n8");
  EXPECT_EQ(dump(), before);
  // Version 7's clients fail from now on.
  EXPECT_EQ(run(v7_heartbeat, {"1", "10000", b2, "10000"}).rfind("ERR:FLVERSION 8", 0), 0u);
  // The eviction version 7 recorded still holds.
  EXPECT_EQ(lines(run(v8_heartbeat, {"1", "20000", c3, "10000"})), (std::vector<std::string>{"3", "0", "-1"}));
  EXPECT_EQ(lines(run(v8_acquire, {c3, "1", "10000", "20000", "q"})), std::vector<std::string>{"-2"});
  // The queue drains in ticket order.
  EXPECT_EQ(run(v8_release, {leased(1), "1"}), "1");
  EXPECT_EQ(grant_of(lines(run(v8_acquire, {b2, "1", "10000", "20000", "q"}))), (std::vector<std::string>{"1", t[b2]}));
  EXPECT_EQ(run(v8_release, {b2, "1"}), "1");
  EXPECT_EQ(server().cmd({"EXISTS", keys.q, keys.w, keys.h, keys.g, keys.o}), "0");
  EXPECT_EQ(server().cmd({"HGET", keys.seq, "v"}), "8");
}

// Whichever version 8 script writes first upgrades a busy version 7 name:
// "v" changes, nothing else but what the call itself does.
TEST_F(Versions, EveryWritingVersion8ScriptUpgradesABusyVersion7Name) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> calls = {
      {"release", {leased(9), "1"}},
      {"cancel", {leased(9), "1"}},
      {"evict", {leased(9), "1"}},
      {"acquire", {leased(9), "1", "10000", "10000", "q"}},  // mode q: may not be granted inline
      {"heartbeat", {"1", "20000", leased(9, kCidC), "10000"}}};
  for (const auto& [op, args] : calls) {
    server().cmd({"DEL", keys.q, keys.w, keys.h, keys.g, keys.seq, keys.o, keys.ev});
    ASSERT_EQ(lines(run(v7_acquire, {leased(1), "1", "10000", "10000", "q"}))[0], "1") << op;
    ASSERT_EQ(lines(run(v7_acquire, {leased(2), "1", "10000", "10000", "q"}))[0], "0") << op;
    std::string before = dump();
    const std::string reply = run(current_script(op), args);
    EXPECT_EQ(reply.rfind("ERR", 0), std::string::npos) << op;
    if (op == "acquire") {  // it queued: only its own entries are new
      EXPECT_EQ(lines(reply)[0], "0");
      continue;
    }
    const auto v7 = before.find("v\n7");
    ASSERT_NE(v7, std::string::npos) << before;
    before.replace(v7, 3, "v\n8");
    EXPECT_EQ(dump(), before) << op;
  }
}

TEST_F(Versions, AnotherVersionIsRefusedByEveryScriptAndNothingChanges) {
  server().cmd({"HSET", keys.seq, "v", "9", "s", "100", "layout", "unknown to version 8"});
  server().cmd({"ZADD", keys.q, "50", member(9)});
  all_refused("9", "version 9: ");
}

}  // namespace
}  // namespace fairlock::test
