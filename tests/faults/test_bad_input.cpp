// Bad input, as tables: every public function with empty, oversized, binary
// and hash-tag-breaking names; zero, negative, NaN and absurd durations; 0 and
// huge permits; use after the Client is gone; unlock without lock, double
// unlock and friends. And on the Redis side, every script called with
// malformed ARGV must answer with the documented FLBADARG error and change
// nothing. (tests/test_inputs.cpp covers the basic cases; these extend it.)
#include <fairlock/fairlock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <variant>

#include "fairlock_lua.h"
#include "net/url.h"
#include "scenario.h"

namespace fairlock::faults {
namespace {

Options opts() {
  Options o;
  o.url = test::server().url();
  o.liveness_ttl = 900ms;
  return o;
}

std::string unique(const std::string& base) {
  static std::atomic<int> n{0};
  return base + ":" + std::to_string(::getpid()) + ":" + std::to_string(n.fetch_add(1));
}

// What a call may do: succeed, or throw one exception type whose message
// contains `text`.
enum class Expect { ok, invalid_argument, logic_error, not_held, error, lock_lost };

const char* to_string(Expect e) {
  switch (e) {
    case Expect::ok: return "no exception";
    case Expect::invalid_argument: return "std::invalid_argument";
    case Expect::logic_error: return "std::logic_error";
    case Expect::not_held: return "Released::not_held";
    case Expect::error: return "fairlock::Error";
    case Expect::lock_lost: return "Released::lost";
  }
  return "?";
}

struct Outcome {
  Expect kind = Expect::ok;
  std::string message;
};

// What release() reports, carried to run() as the kinds above (unlock()
// itself never throws: BasicLockable).
struct ReleasedNotHeld : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct ReleasedLost : std::runtime_error {
  using std::runtime_error::runtime_error;
};
void release(FairSemaphore& s) {
  switch (s.release()) {
    case Released::not_held: throw ReleasedNotHeld("release: not held");
    case Released::lost: throw ReleasedLost("release: lost");
    case Released::failed: throw ConnectionError("release: failed");
    case Released::released: break;
  }
}

Outcome run(const std::function<void()>& f) {
  try {
    f();
    return {Expect::ok, ""};
  } catch (const std::invalid_argument& e) {
    return {Expect::invalid_argument, e.what()};
  } catch (const ReleasedNotHeld& e) {
    return {Expect::not_held, e.what()};
  } catch (const ReleasedLost& e) {
    return {Expect::lock_lost, e.what()};
  } catch (const Error& e) {
    return {Expect::error, e.what()};
  } catch (const std::logic_error& e) {
    return {Expect::logic_error, e.what()};
  } catch (const std::exception& e) {
    return {Expect::ok, std::string("UNEXPECTED std::exception: ") + e.what()};
  }
}

std::size_t g_inputs = 0;

// Prints how many inputs the current test tried (the figures of the report).
struct Count {
  Count() = default;
  Count(const Count&) = delete;
  Count& operator=(const Count&) = delete;
  std::size_t start = g_inputs;
  ~Count() {
    std::cout << "[figures] " << ::testing::UnitTest::GetInstance()->current_test_info()->name() << ": "
              << g_inputs - start << " inputs tried" << std::endl;
  }
};

void expect(const std::string& what, const std::function<void()>& f, Expect want, const std::string& text = "") {
  ++g_inputs;
  Outcome o = run(f);
  EXPECT_EQ(to_string(o.kind), std::string(to_string(want))) << what << ": " << o.message;
  if (!text.empty() && o.kind == want) {
    EXPECT_NE(o.message.find(text), std::string::npos)
        << what << ": message '" << o.message << "' lacks '" << text << "'";
  }
  if (o.message.rfind("UNEXPECTED", 0) == 0) ADD_FAILURE() << what << ": " << o.message;
}

struct NameCase {
  std::string label;
  std::string name;
  bool valid;
};

std::vector<NameCase> names() {
  return {
      {"empty", "", false},
      {"one byte", "a", true},
      {"1024 bytes", std::string(1024, 'n'), true},
      {"1025 bytes", std::string(1025, 'n'), false},
      {"64 KiB", std::string(65536, 'n'), false},
      {"NUL bytes", std::string("nul\0by\0te", 9), true},
      {"only NUL", std::string(1, '\0'), true},
      {"high bytes", "\xff\xfe\x80\x81", true},
      {"UTF-8", "\xc3\xa9\xe6\xbc\xa2", true},
      {"CR LF and RESP", "\r\n*3\r\n$3\r\nDEL\r\n", true},
      {"glob characters", "*?[a-z]\\", true},
      {"spaces and colons", " a : b ", true},
      {"open brace", "{", false},
      {"close brace", "}", false},
      {"both braces", "{}", false},
      {"embedded tag", "a{b}c", false},
      {"tag breaker", "}:q", false},
  };
}

TEST(BadInput, EveryFunctionTakingANameChecksIt) {
  Count counted;
  Client client(opts());
  const std::string token = "p" + client.id() + ":" + std::string(32, '0');
  for (const auto& nc : names()) {
    Expect want = nc.valid ? Expect::ok : Expect::invalid_argument;
    const std::string text = nc.valid ? "" : "name:";
    const std::string& n = nc.name;
    expect(
        "FairLock(" + nc.label + ")", [&] { FairLock l(client, n); }, want, text);
    expect(
        "FairSemaphore(" + nc.label + ")", [&] { FairSemaphore s(client, n, 3); }, want, text);
    expect(
        "inspect(" + nc.label + ")", [&] { client.inspect(n); }, want, text);
    expect(
        "evict(" + nc.label + ")", [&] { client.evict(n, token); }, want, text);
    expect(
        "list(" + nc.label + " as a pattern)", [&] { client.list(n); }, Expect::ok);
    if (nc.valid) {  // a valid name works end to end and leaves only its counter
      std::string name = n + unique("");
      if (name.size() > 1024) name = n;
      expect(
          "lock/unlock(" + nc.label + ")",
          [&] {
            FairLock a(client, name);
            a.lock();
            if (client.inspect(name).holder_count != 1) throw std::runtime_error("not held");
            a.unlock();
          },
          Expect::ok);
      EXPECT_EQ(test::server().cmd({"EXISTS", qkey(name, "q"), qkey(name, "w"), qkey(name, "h"), qkey(name, "g")}), "0")
          << nc.label;
    }
  }
}

TEST(BadInput, PermitCounts) {
  Count counted;
  Client client(opts());
  const std::string name = unique("permits");
  struct P {
    std::uint32_t permits;
    bool valid;
  };
  for (P p : {P{0, false}, P{1, true}, P{2, true}, P{1000000, true}, P{1000001, false},
              P{std::numeric_limits<std::uint32_t>::max(), false}}) {
    expect(
        "permits " + std::to_string(p.permits),
        [&] {
          FairSemaphore s(client, name + ":" + std::to_string(p.permits), p.permits);
          s.lock();
          s.unlock();
        },
        p.valid ? Expect::ok : Expect::invalid_argument, p.valid ? "" : "permits:");
  }
}

TEST(BadInput, OptionDurationsAndSizes) {
  Count counted;
  using ms = std::chrono::milliseconds;
  struct D {
    const char* what;
    std::function<void(Options&)> set;
    bool valid;
    const char* arg;
  };
  const ms huge(2147483648LL);
  std::vector<D> cases = {
      {"liveness 0", [](Options& o) { o.liveness_ttl = ms(0); }, false, "liveness_ttl"},
      {"liveness -1", [](Options& o) { o.liveness_ttl = ms(-1); }, false, "liveness_ttl"},
      {"liveness 29 ms", [](Options& o) { o.liveness_ttl = ms(29); }, false, "liveness_ttl"},
      {"liveness 30 ms", [](Options& o) { o.liveness_ttl = ms(30); }, true, ""},
      {"liveness 2^31-1 ms", [](Options& o) { o.liveness_ttl = ms(2147483647); }, true, ""},
      {"liveness 2^31 ms", [&](Options& o) { o.liveness_ttl = huge; }, false, "liveness_ttl"},
      {"liveness min", [](Options& o) { o.liveness_ttl = ms::min(); }, false, "liveness_ttl"},
      {"liveness max", [](Options& o) { o.liveness_ttl = ms::max(); }, false, "liveness_ttl"},
      {"command timeout 0", [](Options& o) { o.command_timeout = ms(0); }, false, "command_timeout"},
      {"command timeout max", [](Options& o) { o.command_timeout = ms::max(); }, false, "command_timeout"},
      {"connect timeout -5", [](Options& o) { o.connect_timeout = ms(-5); }, false, "connect_timeout"},
      {"connect timeout 2^31", [&](Options& o) { o.connect_timeout = huge; }, false, "connect_timeout"},
      {"pool 0", [](Options& o) { o.pool_size = 0; }, false, "pool_size"},
      {"pool 1", [](Options& o) { o.pool_size = 1; }, true, ""},
      {"pool 1025", [](Options& o) { o.pool_size = 1025; }, false, "pool_size"},
      {"pool SIZE_MAX", [](Options& o) { o.pool_size = std::numeric_limits<std::size_t>::max(); }, false, "pool_size"},
      {"prefix 128 bytes", [](Options& o) { o.key_prefix = std::string(128, 'p'); }, true, ""},
      {"prefix 129 bytes", [](Options& o) { o.key_prefix = std::string(129, 'p'); }, false, "key_prefix"},
      {"prefix with NUL", [](Options& o) { o.key_prefix = std::string("a\0b", 3); }, true, ""},
      {"prefix with }", [](Options& o) { o.key_prefix = "a}b"; }, false, "key_prefix"},
  };
  for (const auto& c : cases) {
    expect(
        c.what,
        [&] {
          Options o = opts();
          c.set(o);
          Client client(o);
          FairLock l(client, unique("opt"));
          l.lock();
          l.unlock();
        },
        c.valid ? Expect::ok : Expect::invalid_argument, c.arg);
  }
  Client client(opts());
  // A lease too short to renew (under 100 ms, a few heartbeat periods) is
  // refused, naming the minimum: a 1 ms lease was lost almost at once.
  struct L {
    const char* what;
    ms lease;
    bool valid;
    const char* names;  // what the refusal's message names
  };
  for (L l : {L{"lease 0", ms(0), false, "lease"}, L{"lease -1", ms(-1), false, "lease"},
              L{"lease min", ms::min(), false, "lease"}, L{"lease 1 ms", ms(1), false, "100 ms"},
              L{"lease 99 ms", ms(99), false, "100 ms"}, L{"lease 100 ms", ms(100), true, ""},
              L{"lease max", ms::max(), false, "lease"}, L{"lease 2^31", huge, false, "lease"},
              L{"lease 2^31-1", ms(2147483647), true, ""}}) {
    expect(
        l.what,
        [&] {
          LockOptions lo;
          lo.lease = l.lease;
          FairLock f(client, unique("lease"), lo);
          f.lock();
          f.unlock();
        },
        l.valid ? Expect::ok : Expect::invalid_argument, l.names);
  }
}

TEST(BadInput, Urls) {
  Count counted;
  struct U {
    std::string url;
    Expect at_construction;
    Expect at_use;
  };
  const std::string port = std::to_string(test::server().port());
  std::vector<U> cases = {
      {"", Expect::invalid_argument, Expect::ok},
      {"127.0.0.1:" + port, Expect::invalid_argument, Expect::ok},
      {"http://127.0.0.1", Expect::invalid_argument, Expect::ok},
      {"redis://", Expect::invalid_argument, Expect::ok},
      {"redis://:" + port, Expect::invalid_argument, Expect::ok},
      {"redis://127.0.0.1:0", Expect::invalid_argument, Expect::ok},
      {"redis://127.0.0.1:65536", Expect::invalid_argument, Expect::ok},
      {"redis://127.0.0.1:-1", Expect::invalid_argument, Expect::ok},
      {"redis://127.0.0.1:12ab", Expect::invalid_argument, Expect::ok},
      {"redis://127.0.0.1:" + port + "/x", Expect::invalid_argument, Expect::ok},
      {"redis://127.0.0.1:" + port + "/99999999", Expect::invalid_argument, Expect::ok},
      {"redis://[::1", Expect::invalid_argument, Expect::ok},
      {"unix://relative.sock", Expect::invalid_argument, Expect::ok},
      {"unix:///tmp/x.sock?foo=1", Expect::invalid_argument, Expect::ok},
      {std::string("redis://127.0.0.1:") + port + std::string("\0", 1), Expect::invalid_argument, Expect::ok},
      {"redis://127.0.0.1:" + port, Expect::ok, Expect::ok},
      {"redis://127.0.0.1:" + port + "/", Expect::ok, Expect::ok},
      {"redis://127.0.0.1:" + port + "/15", Expect::ok, Expect::ok},
      {"redis://127.0.0.1:" + port + "/16", Expect::ok, Expect::error},  // no such database
      {"redis://127.0.0.1:1", Expect::ok, Expect::error},                // nothing listens there
      {"unix:///nonexistent/fairlock.sock", Expect::ok, Expect::error},
      {"redis-sentinel://127.0.0.1:26379", Expect::invalid_argument, Expect::ok},  // no #master
      {"redis-sentinel://127.0.0.1:26379#", Expect::invalid_argument, Expect::ok},
      {"redis-sentinel://#m", Expect::invalid_argument, Expect::ok},
      {"redis-sentinel://127.0.0.1:1,#m", Expect::invalid_argument, Expect::ok},  // an empty host
      {"redis-sentinel://127.0.0.1:99999#m", Expect::invalid_argument, Expect::ok},
      {"redis-sentinel://127.0.0.1:1/x#m", Expect::invalid_argument, Expect::ok},
      {"sentinel://127.0.0.1:26379#m", Expect::invalid_argument, Expect::ok},
      {"redis-cluster://127.0.0.1:1,,127.0.0.1:2", Expect::invalid_argument, Expect::ok},  // an empty seed
      {"redis-cluster://127.0.0.1:1/1", Expect::invalid_argument, Expect::ok},             // database 0 only
      {"redis-cluster://127.0.0.1:1#m", Expect::invalid_argument, Expect::ok},
      {"rediss-cluster://", Expect::invalid_argument, Expect::ok},
      {"redis-cluster:///tmp/x.sock", Expect::invalid_argument, Expect::ok},
      // nothing listens there: the constructor goes on (as for a server
      // down now), the call fails typed
      {"redis-sentinel://127.0.0.1:1,127.0.0.1:2#m", Expect::ok, Expect::error},
      // a sentinel-less port that answers: no SENTINEL command there
      {"redis-sentinel://127.0.0.1:" + port + "#m", Expect::ok, Expect::error},
  };
  for (const auto& c : cases) {
    ++g_inputs;
    Options o = opts();
    o.url = c.url;
    o.connect_timeout = 500ms;
    std::unique_ptr<Client> client;
    Outcome made = run([&] { client = std::make_unique<Client>(o); });
    EXPECT_EQ(to_string(made.kind), std::string(to_string(c.at_construction)))
        << "url '" << c.url << "': " << made.message;
    if (made.kind == Expect::invalid_argument) {
      EXPECT_EQ(made.message.rfind("Options::url: ", 0), 0u) << made.message;
    }
    if (!client) continue;
    Outcome used = run([&] {
      FairLock l(*client, unique("url"));
      l.lock();
      l.unlock();
    });
    EXPECT_EQ(to_string(used.kind), std::string(to_string(c.at_use))) << "url '" << c.url << "': " << used.message;
  }
}

// Redis Cluster URLs, as the parser reads them: the seeds it finds (each
// with the URL's credentials and TLS), or the words it refuses one with.
TEST(BadInput, ClusterUrls) {
  Count counted;
  struct Seeds {
    std::string url;
    std::vector<std::string> where;  // the seeds' host:port
    bool tls;
    std::string user, password;
  };
  const std::vector<Seeds> accepted = {
      {"redis-cluster://10.0.0.1:7000", {"10.0.0.1:7000"}, false, "", ""},
      {"redis-cluster://a:7000,b,[::1]:7002/0", {"a:7000", "b:6379", "::1:7002"}, false, "", ""},
      {"rediss-cluster://u:p%40ss@h1:7000,h2:7001/", {"h1:7000", "h2:7001"}, true, "u", "p@ss"},
      {"redis-cluster://:secret@h", {"h:6379"}, false, "", "secret"},
      {"redis-cluster://u:a#b?c/d,e@h:1", {"h:1"}, false, "u", "a#b?c/d,e"},  // the password as it is
  };
  for (const auto& c : accepted) {
    ++g_inputs;
    detail::Address a;
    ASSERT_NO_THROW(a = detail::parse_address(c.url)) << c.url;
    EXPECT_TRUE(a.in_cluster()) << c.url;
    EXPECT_FALSE(a.via_sentinel()) << c.url;
    EXPECT_EQ(a.node.tls, c.tls) << c.url;
    EXPECT_EQ(a.node.user, c.user) << c.url;
    EXPECT_EQ(a.node.password, c.password) << c.url;
    EXPECT_EQ(a.node.db, 0) << c.url;
    std::vector<std::string> where;
    for (const auto& seed : a.cluster_seeds) {
      where.push_back(seed.where());
      EXPECT_FALSE(seed.unix_socket) << c.url;
      EXPECT_EQ(seed.tls, c.tls) << c.url;
      EXPECT_EQ(seed.user, c.user) << c.url;
      EXPECT_EQ(seed.password, c.password) << c.url;
      EXPECT_EQ(seed.db, 0) << c.url;
    }
    EXPECT_EQ(where, c.where) << c.url;
  }
  const std::vector<std::pair<std::string, std::string>> refused = {
      {"redis-cluster://", "names at least one node"},
      {"rediss-cluster://u:p@", "names at least one node"},
      {"redis-cluster://h:1,,h:2", "an empty host in the list"},
      {"redis-cluster://h:1,", "an empty host in the list"},
      {"redis-cluster://,h:1", "an empty host in the list"},
      {"redis-sentinel://h:1,,h:2#m", "an empty host in the list"},  // the same list parser
      {"redis-cluster://h:0", "port out of range"},
      {"redis-cluster://h:65536", "port out of range"},
      {"redis-cluster://h:x", "bad port"},
      {"redis-cluster://h:", "bad port"},
      {"redis-cluster://[::1:7000", "bad IPv6 host"},
      {"redis-cluster://h:1/1", "Redis Cluster has only database 0"},
      {"redis-cluster://h:1/x", "bad db"},
      {"redis-cluster://h:1#mymaster", "no #master"},
      {"redis-cluster://h:1?db=0", "no query string"},
      {"redis-cluster:///tmp/redis.sock", "not a unix socket"},
      {"redis-cluster://unix:///tmp/redis.sock", "not a unix socket"},
      {"redis-clusters://h:1", "must start with"},
  };
  for (const auto& [url, words] : refused) {
    ++g_inputs;
    try {
      detail::parse_address(url);
      ADD_FAILURE() << url << ": accepted";
    } catch (const BadOption& e) {
      EXPECT_EQ(e.option(), "Options::url") << url;
      EXPECT_NE(e.problem().find(words), std::string::npos) << url << ": " << e.problem();
    }
  }
}

// Runs `call` in a thread; true if it returned within `limit`. If it did
// not, `unblock` is called (and the thread joined) so that the test goes on.
bool returns_within(std::chrono::milliseconds limit, const std::function<void()>& call,
                    const std::function<void()>& unblock) {
  std::atomic<bool> done{false};
  std::thread t([&] {
    try {
      call();
    } catch (...) {
    }
    done = true;
  });
  bool in_time = eventually([&] { return done.load(); }, limit);
  if (!in_time) unblock();
  t.join();
  return in_time;
}

TEST(BadInput, TimeoutsOfEveryKind) {
  Count counted;
  Client client(opts());
  const std::string name = unique("timeouts");
  FairLock holder(client, name), waiter(client, name);
  holder.lock();
  using namespace std::chrono;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  // Non-positive or NaN: behave as try_lock(): false at once, nothing queued.
  std::vector<std::pair<std::string, std::function<bool()>>> at_once = {
      {"0 ns", [&] { return waiter.try_lock_for(nanoseconds(0)); }},
      {"-1 ns", [&] { return waiter.try_lock_for(nanoseconds(-1)); }},
      {"-1 h", [&] { return waiter.try_lock_for(hours(-1)); }},
      {"nanoseconds::min", [&] { return waiter.try_lock_for(nanoseconds::min()); }},
      {"hours::min", [&] { return waiter.try_lock_for(hours::min()); }},
      {"NaN s", [&] { return waiter.try_lock_for(duration<double>(nan)); }},
      {"-inf s", [&] { return waiter.try_lock_for(duration<double>(-inf)); }},
      {"until now - 1 h (steady)", [&] { return waiter.try_lock_until(steady_clock::now() - hours(1)); }},
      {"until the epoch (system)", [&] { return waiter.try_lock_until(system_clock::time_point()); }},
      {"until steady_clock::time_point::min()", [&] { return waiter.try_lock_until(steady_clock::time_point::min()); }},
      {"until system_clock::time_point::min()", [&] { return waiter.try_lock_until(system_clock::time_point::min()); }},
  };
  for (auto& entry : at_once) {
    const std::string& what = entry.first;
    const std::function<bool()>& call = entry.second;  // (a lambda cannot capture a structured binding in C++17)
    ++g_inputs;
    std::atomic<int> result{-1};
    bool in_time = returns_within(
        10s, [&] { result = call() ? 1 : 0; }, [&] { waiter.cancel(); });
    EXPECT_TRUE(in_time) << what << ": blocked (it must behave as try_lock)";
    EXPECT_EQ(result.load(), 0) << what;
    EXPECT_EQ(zcard(test::server(), name, "q"), 0) << what << ": left a queue entry";
  }
  // Tiny positive: a real (short) wait, then false.
  for (auto& entry : std::vector<std::pair<std::string, std::function<bool()>>>{
           {"1e-12 s", [&] { return waiter.try_lock_for(duration<double>(1e-12)); }},
           {"1 ns", [&] { return waiter.try_lock_for(nanoseconds(1)); }},
           {"1 ms", [&] { return waiter.try_lock_for(milliseconds(1)); }},
       }) {
    const std::string& what = entry.first;
    const std::function<bool()>& call = entry.second;
    ++g_inputs;
    std::atomic<int> result{-1};
    EXPECT_TRUE(returns_within(
        10s, [&] { result = call() ? 1 : 0; }, [&] { waiter.cancel(); }))
        << what;
    EXPECT_EQ(result.load(), 0) << what;
    EXPECT_TRUE(eventually([&] { return zcard(test::server(), name, "q") == 0; })) << what;
  }
  // Absurdly long: behaves as lock(); granted once the holder lets go.
  for (auto& entry : std::vector<std::pair<std::string, std::function<bool()>>>{
           {"nanoseconds::max", [&] { return waiter.try_lock_for(nanoseconds::max()); }},
           {"hours::max", [&] { return waiter.try_lock_for(hours::max()); }},
           {"+inf s", [&] { return waiter.try_lock_for(duration<double>(inf)); }},
           {"1e30 s (float)", [&] { return waiter.try_lock_for(duration<float>(1e30f)); }},
           {"until steady max", [&] { return waiter.try_lock_until(steady_clock::time_point::max()); }},
           {"until system max", [&] { return waiter.try_lock_until(system_clock::time_point::max()); }},
       }) {
    const std::string& what = entry.first;
    const std::function<bool()>& call = entry.second;
    ++g_inputs;
    std::atomic<int> result{-1};
    std::thread release([&] {
      eventually([&] { return zcard(test::server(), name, "q") == 1; });
      holder.unlock();
    });
    EXPECT_TRUE(returns_within(
        30s, [&] { result = call() ? 1 : 0; }, [&] { waiter.cancel(); }))
        << what;
    release.join();
    EXPECT_EQ(result.load(), 1) << what;
    if (waiter.owns_lock()) waiter.unlock();
    holder.lock();
  }
  holder.unlock();
}

TEST(BadInput, UnlockWithoutLockDoubleUnlockAndOtherMisuse) {
  Count counted;
  Client client(opts());
  const std::string name = unique("misuse");
  FairLock a(client, name), b(client, name);
  expect(
      "unlock without lock", [&] { release(a); }, Expect::not_held);
  expect(
      "cancel without a wait", [&] { a.cancel(); }, Expect::ok);
  expect(
      "owns_lock before any lock",
      [&] {
        if (a.owns_lock() || a.fence() != 0) throw std::logic_error("owns");
      },
      Expect::ok);
  a.lock();
  expect(
      "lock twice", [&] { a.lock(); }, Expect::logic_error);
  expect(
      "try_lock while held", [&] { a.try_lock(); }, Expect::logic_error);
  expect(
      "try_lock_for while held", [&] { a.try_lock_for(10ms); }, Expect::logic_error);
  expect(
      "unlock of another object on the same name", [&] { release(b); }, Expect::not_held);
  expect(
      "b.try_lock while a holds",
      [&] {
        if (b.try_lock()) throw std::logic_error("barged");
      },
      Expect::ok);
  expect(
      "unlock after a failed try_lock", [&] { release(b); }, Expect::not_held);
  // A wait in another thread: the object is busy.
  std::thread t([&] {
    try {
      b.lock();
    } catch (...) {
    }
  });
  ASSERT_TRUE(eventually([&] { return zcard(test::server(), name, "q") == 1; }));
  expect(
      "lock while another thread waits on the same object", [&] { b.lock(); }, Expect::logic_error);
  expect(
      "unlock while another thread waits on the same object", [&] { release(b); }, Expect::not_held);
  a.unlock();
  t.join();
  expect(
      "double unlock", [&] { release(a); }, Expect::not_held);
  b.unlock();
  expect(
      "cancel twice after the wait ended",
      [&] {
        b.cancel();
        b.cancel();
      },
      Expect::ok);
  // Moved-from objects.
  FairLock moved(client, name);
  FairLock target(std::move(moved));
  expect(
      "lock of a moved-from object", [&] { moved.lock(); },  // NOLINT(bugprone-use-after-move): tests it
      Expect::logic_error);
  expect(
      "try_lock of a moved-from object", [&] { moved.try_lock(); }, Expect::logic_error);
  expect(
      "release of a moved-from object", [&] { release(moved); }, Expect::not_held);
  expect(
      "queries of a moved-from object",
      [&] {
        moved.cancel();
        if (moved.owns_lock() || moved.fence() != 0 || !moved.name().empty() || moved.permits() != 0) {
          throw std::logic_error("moved-from object reports state");
        }
      },
      Expect::ok);
  target.lock();
  FairLock other(client, unique("other"));
  expect(
      "move-assign over a held lock releases it", [&] { target = std::move(other); }, Expect::ok);
  EXPECT_EQ(zcard(test::server(), name, "h"), 0) << "the overwritten lock was not released";
  EXPECT_EQ(test::server().cmd({"EXISTS", qkey(name, "q"), qkey(name, "w"), qkey(name, "h"), qkey(name, "g")}), "0");
}

TEST(BadInput, UseAfterTheClientIsGone) {
  Count counted;
  const std::string name = unique("after");
  auto client = std::make_unique<Client>(opts());
  auto held = std::make_unique<FairLock>(*client, name);
  auto idle = std::make_unique<FairLock>(*client, name + ":idle");
  FairSemaphore sem(*client, name + ":sem", 2);
  held->lock();
  client->shutdown();
  expect(
      "shutdown twice", [&] { client->shutdown(); }, Expect::ok);
  expect(
      "stats/id/options after shutdown",
      [&] {
        client->stats();
        if (client->id().empty() || client->options().url.empty()) throw std::logic_error("empty");
      },
      Expect::ok);
  expect(
      "inspect after shutdown", [&] { client->inspect(name); }, Expect::error);
  expect(
      "list after shutdown", [&] { client->list(); }, Expect::error);
  expect(
      "evict after shutdown", [&] { client->evict(name, "p" + client->id() + ":" + std::string(32, '0')); },
      Expect::error);
  expect(
      "new FairLock after shutdown", [&] { FairLock l(*client, name); }, Expect::error);
  client.reset();  // destroyed; the locks outlive it
  expect(
      "lock after destruction", [&] { idle->lock(); }, Expect::error);
  expect(
      "try_lock after destruction", [&] { idle->try_lock(); }, Expect::error);
  expect(
      "try_lock_for after destruction", [&] { idle->try_lock_for(10ms); }, Expect::error);
  expect(
      "semaphore lock after destruction", [&] { sem.lock(); }, Expect::error);
  expect(
      "unlock of a never-locked lock after destruction", [&] { release(*idle); }, Expect::not_held);
  expect(
      "owns_lock of a grant released at shutdown",
      [&] {
        if (held->owns_lock()) throw std::logic_error("owns");
      },
      Expect::ok);
  {  // Client::shutdown released it: unlock() is a no-op (or reports the loss)
    ++g_inputs;
    Outcome o = run([&] { release(*held); });
    EXPECT_TRUE(o.kind == Expect::ok || o.kind == Expect::lock_lost) << to_string(o.kind) << ": " << o.message;
  }
  expect(
      "cancel/fence/name/permits after destruction",
      [&] {
        idle->cancel();
        held->fence();
        if (held->name() != name || sem.permits() != 2) throw std::logic_error("lost its identity");
      },
      Expect::ok);
  expect(
      "destruction of the locks after the client",
      [&] {
        held.reset();
        idle.reset();
      },
      Expect::ok);
  EXPECT_EQ(zcard(test::server(), name, "h"), 0);
}

TEST(BadInput, ThrowingCallbacksAreContained) {
  Count counted;
  Client client(opts());
  const std::string name = unique("callbacks");
  LockOptions lo;
  lo.lease = 300ms;
  lo.on_position = [](std::size_t) { throw std::runtime_error("on_position throws"); };
  lo.on_lost = [] { throw 42; };  // not even a std::exception
  FairLock a(client, name, lo), b(client, name, lo);
  a.lock();
  std::atomic<bool> got{false};
  std::thread t([&] {
    b.lock();
    got = true;
  });
  ASSERT_TRUE(eventually([&] { return zcard(test::server(), name, "q") == 1; }));
  test::server().cmd({"DEL", qkey(name, "h")});  // a's grant vanishes: on_lost fires and throws
  ASSERT_TRUE(eventually([&] { return got.load(); }));
  t.join();
  EXPECT_TRUE(eventually([&] { return !a.owns_lock(); }));
  expect(
      "unlock of the lost grant", [&] { release(a); }, Expect::lock_lost);
  b.unlock();
  g_inputs += 2;
}

// ------------------------------------------------------------ Redis side

// Every script with malformed ARGV: the documented FLBADARG error reply,
// and nothing changed (the name's keys are byte-identical afterwards).
TEST(ScriptArgv, MalformedArgvGetsFlbadargAndChangesNothing) {
  Count counted;
  test::RedisServer& s = test::server();
  const std::string name = unique("argv");
  RawParticipant holder(s, name, "p00000000000000aa:000000000000000000000000000000a1");
  RawParticipant waiter(s, name, "p00000000000000aa:000000000000000000000000000000a2");
  ASSERT_EQ(holder.acquire(60000, 60000).substr(0, 2), "1\n");
  ASSERT_EQ(waiter.acquire(60000, 60000).substr(0, 2), "0\n");
  auto snapshot = [&] {
    std::string out;
    for (const char* suffix : {"q", "w", "h", "g", "seq", "o", "ev"}) out += s.cmd({"DUMP", qkey(name, suffix)}) + "|";
    return out;
  };
  const std::string before = snapshot();
  const std::string m = "p00000000000000aa:000000000000000000000000000000a3";
  using namespace fairlock::detail::lua;
  const std::vector<std::string> bad_int = {"",
                                            "x",
                                            "1.5",
                                            "-1",
                                            "0",
                                            "inf",
                                            "-inf",
                                            "nan",
                                            "1e400",
                                            "2147483648",
                                            "99999999999999999999",
                                            " ",
                                            "1 2",
                                            std::string("1\0", 2)};
  const std::vector<std::string> bad_member = {"",
                                               "p",
                                               "p:",
                                               "pabc",
                                               "x00:00",
                                               "P00:00",
                                               "p0g:00",
                                               "p00:0g",
                                               "p00:",
                                               ":00",
                                               "p00:00\n",
                                               std::string("p00:00\0", 7),
                                               "p" + std::string(200, 'a') + ":00",
                                               "p00:00:00",
                                               "p00:00:0",  // version 6's lease: 1 .. 2^31-1, no leading zero
                                               "p00:00:01",
                                               "p00:00:2147483648",
                                               "p00:00:99999999999",
                                               "p00:00:-1",
                                               "p00:00:1e3",
                                               "p00:00: 5",
                                               "p00:00:",
                                               "p00:00:1:1",
                                               "p00:00:a",
                                               "pé:00"};
  struct Call {
    std::string label;
    std::string_view source;
    std::vector<std::string> argv;
  };
  std::vector<Call> calls;
  auto add = [&](const std::string& label, std::string_view src, std::vector<std::string> argv) {
    calls.push_back({label, src, std::move(argv)});
  };
  for (const auto& bm : bad_member) {
    add("acquire member", acquire_source, {bm, "1", "1000", "1000", "q"});
    add("release member", release_source, {bm, "1"});
    add("cancel member", cancel_source, {bm, "1"});
    add("evict member", evict_source, {bm, "1"});
    add("heartbeat member", heartbeat_source, {"1", "1000", bm, "1000"});
  }
  for (const auto& bi : bad_int) {
    add("acquire permits", acquire_source, {m, bi, "1000", "1000", "q"});
    add("acquire lease", acquire_source, {m, "1", bi, "1000", "q"});
    add("acquire liveness", acquire_source, {m, "1", "1000", bi, "q"});
    add("release permits", release_source, {m, bi});
    add("cancel permits", cancel_source, {m, bi});
    add("evict permits", evict_source, {m, bi});
    add("heartbeat permits", heartbeat_source, {bi, "1000", m, "1000"});
    add("heartbeat liveness", heartbeat_source, {"1", bi, m, "1000"});
    add("heartbeat lease", heartbeat_source, {"1", "1000", m, bi == "0" ? "-5" : bi});  // 0: a holder's check
    add("inspect limit", inspect_source, {bi == "0" ? "-5" : bi});
  }
  for (const char* mode : {"", "Q", "qq", "x", "t\n"})
    add("acquire mode", acquire_source, {m, "1", "1000", "1000", mode});
  add("acquire permits over 1e6", acquire_source, {m, "1000001", "1000", "1000", "q"});
  add("inspect limit over 1e5", inspect_source, {"100001"});
  // Missing arguments.
  add("acquire without arguments", acquire_source, {});
  add("acquire without mode", acquire_source, {m, "1", "1000", "1000"});
  add("release without permits", release_source, {m});
  add("cancel without arguments", cancel_source, {});
  add("evict without permits", evict_source, {m});
  add("heartbeat without arguments", heartbeat_source, {});
  add("heartbeat with half a pair", heartbeat_source, {"1", "1000", m});
  add("heartbeat with a bad second pair", heartbeat_source,
      {"1", "1000", holder.member(), "1000", waiter.member(), "-1"});
  add("inspect without limit", inspect_source, {});
  std::map<std::string, std::string> shas;
  std::size_t tried = 0;
  for (const auto& c : calls) {
    std::string src(c.source);
    if (!shas.count(src)) shas[src] = s.cmd({"SCRIPT", "LOAD", src});
    std::vector<std::string> argv = {"EVALSHA", shas[src], "7"};
    for (const char* suffix : {"q", "w", "h", "g", "seq", "o", "ev"}) argv.push_back(qkey(name, suffix));
    argv.insert(argv.end(), c.argv.begin(), c.argv.end());
    std::string reply = s.cmd(argv);
    ++tried;
    std::string shown;
    for (const auto& a : c.argv) shown += "'" + a.substr(0, 40) + "' ";
    EXPECT_EQ(reply.rfind("ERR:FLBADARG ", 0), 0u) << c.label << " " << shown << "-> " << reply;
  }
  EXPECT_EQ(snapshot(), before) << "a rejected call changed the name's keys";
  g_inputs += tried;
  holder.release();
  waiter.release();
  s.cmd(
      {"DEL", qkey(name, "q"), qkey(name, "w"), qkey(name, "h"), qkey(name, "g"), qkey(name, "seq"), qkey(name, "o")});
}

// A script called with the wrong number of keys must not run on nil keys
// (a Lua runtime error, possibly after partial work); the protocol's
// argument error is the documented answer.
TEST(ScriptArgv, WrongNumberOfKeysGetsFlbadarg) {
  Count counted;
  test::RedisServer& s = test::server();
  const std::string name = unique("nkeys");
  const std::string m = "p00000000000000aa:000000000000000000000000000000b1";
  using namespace fairlock::detail::lua;
  s.cmd({"FUNCTION", "LOAD", "REPLACE", std::string(library_source)});
  std::vector<std::pair<std::string, std::string>> ways;  // EVALSHA <sha> or FCALL <function>, per script
  for (const auto& script : kScripts) {
    ways.emplace_back("EVALSHA", s.cmd({"SCRIPT", "LOAD", std::string(script.source)}));
    ways.emplace_back("FCALL", std::string(script.function));
  }
  for (const auto& [command, script] : ways) {
    for (int nkeys : {0, 6, 8}) {
      std::vector<std::string> argv = {command, script, std::to_string(nkeys)};
      for (int i = 0; i < nkeys; ++i) argv.push_back(qkey(name, std::to_string(i)));
      for (const auto& a : {m, std::string("1"), std::string("1000"), std::string("1000"), std::string("q")}) {
        argv.push_back(a);
      }
      std::string reply = s.cmd(argv);
      ++g_inputs;
      EXPECT_EQ(reply.rfind("ERR:FLBADARG ", 0), 0u)
          << command << " " << script << ", " << nkeys << " keys -> " << reply;
    }
  }
  EXPECT_EQ(s.cmd({"KEYS", "fairlock:{" + name + "}*"}), "");
}

}  // namespace
}  // namespace fairlock::faults
