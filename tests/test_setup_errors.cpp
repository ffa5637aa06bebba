// What the library reports when the setup is wrong, and how soon: a server
// that is not there, an unknown host, a wrong or missing password, a user
// without a right, bad arguments (BadOption); no internal type escapes.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <thread>
#include <typeinfo>

#include "test_util.h"

namespace fairlock::test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// A server that needs a password (the shared one needs none).
RedisServer& locked_server() {
  static RedisServer s;
  static const bool locked = [] {
    s.cmd({"CONFIG", "SET", "requirepass", "right"});  // (its own cmd() is unusable from here on)
    return true;
  }();
  (void)locked;
  return s;
}

std::string locked_url(const std::string& credentials) {
  return "redis://" + credentials + "127.0.0.1:" + std::to_string(locked_server().port());
}

// One way of asking, from the Client's constructor on.
struct Call {
  const char* what;
  std::function<void(FairLock&)> run;
};

const std::vector<Call>& calls() {
  static const std::vector<Call> all = {
      {"lock", [](FairLock& l) { l.lock(); }},
      {"try_lock_for", [](FairLock& l) { (void)l.try_lock_for(5s); }},
      {"lock_async", [](FairLock& l) { (void)l.lock_future().get(); }},
  };
  return all;
}

// Constructs a client for `o` and asks by `call`; returns how long until it
// threw, and checks what it threw: E, never an internal type.
template <class E>
std::chrono::milliseconds failure_time(const Options& o, const Call& call, const std::string& part) {
  const auto start = Clock::now();
  try {
    Client client(o);
    FairLock lock(client, unique_name("fast-failure"));
    call.run(lock);
    ADD_FAILURE() << call.what << ": no error";
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    EXPECT_EQ(std::string(typeid(e).name()).find("detail"), std::string::npos) << typeid(e).name();
  } catch (const std::exception& e) {
    ADD_FAILURE() << call.what << ": " << typeid(e).name() << ": " << e.what();
  }
  return since(start);
}

template <class E>
void expect_fast(Options o, const std::string& part, std::chrono::milliseconds allowance = 0ms) {
  o.connect_timeout = 20s;  // a failure that waited for it would show
  for (Notify mode : {Notify::publish, Notify::poll, Notify::keyspace}) {
    o.notify = mode;
    for (const Call& call : calls()) {
      const auto took = failure_time<E>(o, call, part);
      EXPECT_LT(took, 1s + allowance) << o.url << " " << call.what << " (notify " << static_cast<int>(mode) << ")";
    }
  }
}

TEST(Errors, ARefusedConnectionFailsAtOnce) {
  Options o = opts_for(server());
  o.url = "redis://127.0.0.1:1";
  expect_fast<ConnectionError>(o, "cannot connect to 127.0.0.1:1");
}

TEST(Errors, AnUnknownHostFailsAsSoonAsTheResolverSaysSo) {
  // The resolver's own time is not the library's: a lost DNS packet costs
  // one resolver retry (resolv.conf "timeout", 5 s by default), allowed on
  // top; any wait of the library's own (connect_timeout: 20 s) is not.
  Options o = opts_for(server());
  o.url = "redis://nosuchhost.invalid:6379";
  expect_fast<ConnectionError>(o, "nosuchhost.invalid", 6s);
}

TEST(Errors, AWrongPasswordIsAccessDeniedAtOnce) {
  Options o = opts_for(server());
  o.url = locked_url(":wrong@");
  expect_fast<AccessDenied>(o, "Options::url");
}

TEST(Errors, NoPasswordIsAccessDeniedAtOnce) {
  Options o = opts_for(server());
  o.url = locked_url("");
  expect_fast<AccessDenied>(o, "Options::url");
  try {
    Client c(o);
    ADD_FAILURE() << "the constructor did not throw";
  } catch (const AccessDenied& e) {
    EXPECT_TRUE(is_setup_error(e));
  }
  o.url = locked_url(":right@");
  Client c(o);  // the right one works
  FairLock lock(c, unique_name("right-password"));
  lock.lock();
  EXPECT_EQ(lock.release(), Released::released);
}

// A user without the scripts' commands: FCALL missing falls back to
// EVALSHA (as before); missing both is AccessDenied, a setup error.
TEST(Errors, AUserWithoutTheRightsIsAccessDenied) {
  const std::string name = unique_name("acl");
  server().cmd({"ACL", "SETUSER", "flnofcall", "reset", "on", ">pw", "~*", "&*", "+@all", "-fcall", "-function"});
  server().cmd({"ACL", "SETUSER", "flnothing", "reset", "on", ">pw", "~*", "&*", "+@all", "-fcall", "-function",
                "-evalsha", "-eval"});
  Options o = opts_for(server());
  o.url = "redis://flnofcall:pw@127.0.0.1:" + std::to_string(server().port());
  {
    Client c(o);
    FairLock lock(c, name);
    lock.lock();
    EXPECT_EQ(lock.release(), Released::released);
  }
  o.url = "redis://flnothing:pw@127.0.0.1:" + std::to_string(server().port());
  const std::string before = keys_of(server(), name);
  Client c(o);
  FairLock lock(c, name);
  try {
    lock.lock();
    ADD_FAILURE() << "no AccessDenied";
  } catch (const AccessDenied& e) {
    EXPECT_NE(std::string(e.what()).find("NOPERM"), std::string::npos) << e.what();
    EXPECT_TRUE(is_setup_error(e));
  }
  EXPECT_EQ(keys_of(server(), name), before);
}

// A password holding '/', '@', ':' or '#', as it is or percent-encoded.
TEST(Errors, PasswordsWithUrlCharactersWork) {
  const std::string port = std::to_string(server().port());
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"a/b", "a/b"}, {"a@b", "a@b"}, {"a:b", "a:b"}, {"a#b", "a#b"}, {"x/@:#y", "x%2F%40%3A%23y"}};
  for (const auto& [password, encoded] : cases) {
    server().cmd({"ACL", "SETUSER", "flpw", "reset", "on", ">" + password, "~*", "&*", "+@all"});
    for (const std::string& written : {password, encoded}) {
      Options o = opts_for(server(), Notify::poll);
      o.url = "redis://flpw:" + written + "@127.0.0.1:" + port + "/0";
      Client c(o);
      FairLock lock(c, unique_name("password"));
      EXPECT_TRUE(lock.try_lock()) << written;
      EXPECT_EQ(lock.release(), Released::released);
    }
  }
}

template <class F>
BadOption bad_option(F&& f) {
  try {
    f();
  } catch (const BadOption& e) {
    return e;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not a BadOption: " << typeid(e).name() << ": " << e.what();
  }
  ADD_FAILURE() << "no BadOption";
  return BadOption("", "");
}

TEST(Errors, BadArgumentsAreBadOptions) {
  Client client(opts_for(server()));
  auto options = [](const std::function<void(Options&)>& f) {
    Options o = opts_for(server());
    f(o);
    return [o] { Client c(o); };
  };
  struct Case {
    std::function<void()> call;
    const char* option;
  };
  LockOptions short_lease;
  short_lease.lease = 1ms;
  const std::vector<Case> cases = {
      {options([](Options& o) { o.url = "redis://127.0.0.1:99999"; }), "Options::url"},
      {options([](Options& o) { o.key_prefix = ""; }), "Options::key_prefix"},
      {options([](Options& o) { o.command_timeout = 0ms; }), "Options::command_timeout"},
      {options([](Options& o) { o.tls.cert_file = "x"; }), "Options::tls.key_file"},
      {[&] { FairLock l(client, "n", short_lease); }, "LockOptions::lease"},
      {[&] { FairSemaphore s(client, "n", 0); }, "permits"},
      {[&] { FairLock l(client, ""); }, "name"},
      {[&] { (void)client.evict("n", "not-a-token"); }, "token"},
  };
  for (const Case& c : cases) {
    const BadOption e = bad_option(c.call);
    EXPECT_EQ(e.option(), c.option) << e.what();
    EXPECT_EQ(std::string(e.what()), e.option() + ": " + e.problem());
  }
  EXPECT_NE(bad_option([&] { FairLock l(client, "n", short_lease); }).problem().find("at least 100 ms"),
            std::string::npos);
}

// The client has talked to its server (a lock taken and released); the
// server dies and is back 300 ms later. A try_lock_for(10s) begun while it
// is down must wait for it, not fail at once as a first contact would.
TEST(Errors, AServerDownUnderARunningClientIsRiddenOutByATimedWait) {
  RedisServer s;
  Client client(opts_for(s));
  FairLock lock(client, unique_name("ride-out"));
  lock.lock();
  lock.unlock();
  s.kill();
  std::thread back([&s] {
    std::this_thread::sleep_for(300ms);
    s.restart();
  });
  bool got = false;
  try {
    got = lock.try_lock_for(10s);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "failed at once instead of riding the restart out: " << e.what();
  }
  back.join();
  EXPECT_TRUE(got);
  if (got) lock.unlock();
}

// A release sent while the server is down fails (Released::failed) and is
// asked again in the background: when the server is back (the grant with
// it: an fsync-always AOF), it runs, and the next waiter is granted then,
// not when the holder's lease (60 s here; liveness too) would end.
TEST(Errors, AReleaseThatFailedIsAskedAgainWhenTheServerIsBack) {
  RedisServer s({"--appendonly", "yes", "--appendfsync", "always"});
  Client holder_client(long_lived(opts_for(s))), waiter_client(opts_for(s));
  const std::string name = unique_name("release-retried");
  FairLock holder(holder_client, name, long_lease());
  holder.lock();
  s.kill();
  EXPECT_EQ(holder.release(), Released::failed);
  s.restart();
  FairLock waiter(waiter_client, name);
  EXPECT_TRUE(waiter.try_lock_for(30s)) << "the release was not asked again: the grant waits out its lease";
}

// Shutting down does not wait out the lease of a release still being asked
// again (60 s here): one last attempt, bounded, and the client stops.
TEST(Errors, ShutdownDoesNotWaitForAReleaseBeingAskedAgain) {
  RedisServer s;
  Client client(opts_for(s));
  FairLock holder(client, unique_name("release-at-shutdown"), long_lease());
  holder.lock();
  s.kill();
  EXPECT_EQ(holder.release(), Released::failed);
  const auto t0 = Clock::now();
  client.shutdown();
  EXPECT_LT(Clock::now() - t0, 10s) << "shutdown waited for the release's retries";
}

}  // namespace
}  // namespace fairlock::test
