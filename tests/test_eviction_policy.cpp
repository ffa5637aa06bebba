// A server whose maxmemory-policy may evict the lock's keys: refused by
// default (EvictionPolicyError naming the policy), allowed with an error in
// the log, a warning where nothing is evicted yet (maxmemory 0) or where the
// policy cannot be read (INFO and CONFIG denied); checked on each connection
// the client opens, so a policy changed while it runs is caught at the next
// reconnect, and never on the hot path.
#include <gtest/gtest.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include "child.h"
#include "node/eviction_check.h"
#include "test_util.h"

namespace fairlock::test {
namespace {

using namespace std::chrono_literals;

const std::vector<std::string> kEvicting = {"--maxmemory-policy", "volatile-ttl", "--maxmemory", "100mb"};

// The client's log, kept in memory with each line's level.
class Log {
 public:
  Log()
      : sink_(std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(256)),
        logger_(std::make_shared<spdlog::logger>("eviction", sink_)) {
    logger_->set_level(spdlog::level::debug);
  }
  const std::shared_ptr<spdlog::logger>& logger() const { return logger_; }
  // The lines of `level` that contain `text`.
  std::vector<std::string> lines(spdlog::level::level_enum level, const std::string& text) const {
    std::vector<std::string> out;
    for (const auto& m : sink_->last_raw()) {
      std::string line(m.payload.data(), m.payload.size());
      if (m.level == level && line.find(text) != std::string::npos) out.push_back(line);
    }
    return out;
  }
  std::string all() const {
    std::string out;
    for (const auto& line : sink_->last_formatted()) out += line;
    return out;
  }

 private:
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink_;
  std::shared_ptr<spdlog::logger> logger_;
};

Options opts_logged(const RedisServer& s, const Log& log, const std::string& url = "") {
  Options o = opts_for(s);
  if (!url.empty()) o.url = url;
  o.logger = log.logger();
  return o;
}

// The Client's constructor throws EvictionPolicyError; its message.
std::string refusal(const Options& o) {
  try {
    Client c(o);
  } catch (const EvictionPolicyError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not an EvictionPolicyError: " << e.what();
    return "";
  }
  ADD_FAILURE() << "the client was not refused";
  return "";
}

void expect_names_policy_and_fix(const std::string& m, const std::string& policy) {
  EXPECT_NE(m.find("maxmemory-policy " + policy), std::string::npos) << m;
  EXPECT_NE(m.find("second holder"), std::string::npos) << m;
  EXPECT_NE(m.find("CONFIG SET maxmemory-policy noeviction"), std::string::npos) << m;
  EXPECT_NE(m.find("allow_evicting_server"), std::string::npos) << m;
}

void lock_and_unlock(Client& c, const std::string& name) {
  FairLock l(c, name);
  ASSERT_TRUE(l.try_lock_for(10s));
  EXPECT_EQ(l.release(), Released::released);
}

TEST(Eviction, AnEvictingPolicyWithMaxmemoryIsRefused) {
  RedisServer s(kEvicting);
  Log log;
  expect_names_policy_and_fix(refusal(opts_logged(s, log)), "volatile-ttl");
  ASSERT_EQ(s.cmd({"CONFIG", "SET", "maxmemory-policy", "allkeys-lru"}), "OK");
  Options poll = opts_logged(s, log);
  poll.notify = Notify::poll;  // no subscriber: the check does not rest on it
  expect_names_policy_and_fix(refusal(poll), "allkeys-lru");
  EXPECT_EQ(keys_of(s, "*"), "") << "a refused client wrote nothing";
}

TEST(Eviction, AllowedByTheOptionWithOneErrorInTheLog) {
  RedisServer s(kEvicting);
  Log log;
  Options o = opts_logged(s, log);
  o.allow_evicting_server = true;
  Client c(o);
  lock_and_unlock(c, unique_name("allowed"));
  const auto errors = log.lines(spdlog::level::err, "maxmemory-policy volatile-ttl");
  ASSERT_EQ(errors.size(), 1u) << log.all();
  EXPECT_NE(errors[0].find("allow_evicting_server"), std::string::npos) << errors[0];
  // Reconnects check again, but the same finding is not logged again.
  s.cmd({"CLIENT", "KILL", "TYPE", "normal"});
  lock_and_unlock(c, unique_name("allowed"));
  EXPECT_EQ(log.lines(spdlog::level::err, "maxmemory-policy").size(), 1u) << log.all();
}

TEST(Eviction, AnEvictingPolicyWithoutMaxmemoryIsAWarning) {
  RedisServer s({"--maxmemory-policy", "allkeys-lru"});
  Log log;
  Client c(opts_logged(s, log));
  lock_and_unlock(c, unique_name("unlimited"));
  const auto warnings = log.lines(spdlog::level::warn, "maxmemory-policy allkeys-lru with maxmemory 0");
  ASSERT_EQ(warnings.size(), 1u) << log.all();
  EXPECT_NE(warnings[0].find("as soon as maxmemory is set"), std::string::npos) << warnings[0];
  EXPECT_TRUE(log.lines(spdlog::level::err, "maxmemory").empty()) << log.all();
}

TEST(Eviction, NoevictionIsSilent) {
  Log log;
  Client c(opts_logged(server(), log));
  lock_and_unlock(c, unique_name("noeviction"));
  EXPECT_EQ(log.all().find("maxmemory"), std::string::npos) << log.all();
}

// A user allowed neither INFO nor CONFIG: one warning, and the client goes
// on; allowed CONFIG but not INFO: CONFIG GET finds the policy.
TEST(Eviction, UserWithoutInfoOrConfig) {
  RedisServer s(kEvicting);
  ASSERT_EQ(s.cmd({"ACL", "SETUSER", "blind", "on", ">pw", "~*", "&*", "+@all", "-info", "-config"}), "OK");
  ASSERT_EQ(s.cmd({"ACL", "SETUSER", "noinfo", "on", ">pw", "~*", "&*", "+@all", "-info"}), "OK");
  const std::string port = std::to_string(s.port());
  Log log;
  {
    Client c(opts_logged(s, log, "redis://blind:pw@127.0.0.1:" + port));
    lock_and_unlock(c, unique_name("blind"));
    s.cmd({"CLIENT", "KILL", "TYPE", "normal"});
    lock_and_unlock(c, unique_name("blind"));
  }
  const auto warnings = log.lines(spdlog::level::warn, "could not check the maxmemory-policy");
  ASSERT_EQ(warnings.size(), 1u) << log.all();
  EXPECT_NE(warnings[0].find("NOPERM"), std::string::npos) << warnings[0];
  expect_names_policy_and_fix(refusal(opts_logged(s, log, "redis://noinfo:pw@127.0.0.1:" + port)), "volatile-ttl");
}

// The check runs on each connection the client opens: a policy changed on
// a running server is caught when the client next reconnects (here: its
// connections killed; likewise after a restart or a failover), and the
// refusal ends once the policy is fixed.
TEST(Eviction, APolicyChangedWhileRunningIsCaughtAtTheNextReconnect) {
  RedisServer s;
  Log log;
  Client c(opts_logged(s, log));
  const std::string name = unique_name("changed");
  lock_and_unlock(c, name);
  ASSERT_EQ(s.cmd({"CONFIG", "SET", "maxmemory-policy", "volatile-lru"}), "OK");
  ASSERT_EQ(s.cmd({"CONFIG", "SET", "maxmemory", "100mb"}), "OK");
  s.cmd({"CLIENT", "KILL", "TYPE", "normal"});
  FairLock l(c, name);
  try {
    (void)l.try_lock_for(10s);
    ADD_FAILURE() << "not refused after the reconnect";
  } catch (const EvictionPolicyError& e) {
    expect_names_policy_and_fix(e.what(), "volatile-lru");
  }
  EXPECT_FALSE(l.owns_lock());
  ASSERT_EQ(s.cmd({"CONFIG", "SET", "maxmemory-policy", "noeviction"}), "OK");
  lock_and_unlock(c, name);
}

// The hot path: the check costs one INFO per connection opened, none per
// call (200 lock+unlock pairs on one client: at most one INFO per pool and
// heartbeat connection).
TEST(Eviction, CheckedPerConnectionNotPerCall) {
  RedisServer s;
  const long long before = command_calls(s, "info");  // (this INFO counts in the next reading)
  Options o = opts_for(s);
  Client c(o);
  FairLock l(c, unique_name("hot"));
  for (int i = 0; i < 200; ++i) {
    l.lock();
    l.unlock();
  }
  const long long info = command_calls(s, "info") - before - 1;
  EXPECT_GE(info, 1) << "no check at start-up";
  EXPECT_LE(info, static_cast<long long>(o.pool_size) + 1);
}

TEST(Eviction, CommandLineRefusesWithStatus78UnlessAllowed) {
  RedisServer s(kEvicting);
  const std::string name = unique_name("cli-evicting");
  auto cli = [&](std::vector<std::string> args, std::string* out) {
    args.insert(args.begin(), {"--url", s.url()});
    Child c(FAIRLOCK_CLI_PATH, args, true);
    *out = c.rest();
    return c.wait();
  };
  std::string out;
  EXPECT_EQ(cli({"run", name, "--", "true"}, &out), 78);
  EXPECT_NE(out.find("maxmemory-policy volatile-ttl"), std::string::npos) << out;
  EXPECT_NE(out.find("--allow-evicting-server"), std::string::npos) << out;
  EXPECT_EQ(cli({"status", name}, &out), 78) << out;
  EXPECT_EQ(cli({"--allow-evicting-server", "run", name, "--", "true"}, &out), 0) << out;
  EXPECT_EQ(cli({"status", "--allow-evicting-server", name}, &out), 0) << out;
}

}  // namespace
}  // namespace fairlock::test
