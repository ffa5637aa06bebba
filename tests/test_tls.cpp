// TLS (rediss://) against real redis-servers with a TLS port, certificates
// made at test time (tests/harness/tls_pki.cpp): the lock works over TLS, and every
// setup that must not work fails with its typed error and leaves nothing in
// any queue.
#include <gtest/gtest.h>
#include <signal.h>

#include <future>
#include <memory>
#include <string>
#include <thread>

#include "child.h"
#include "fairlock/errors.h"
#include "net/connection.h"
#include "net/tls.h"
#include "test_util.h"
#include "tls_pki.h"

namespace fairlock::test {
namespace {

using namespace std::chrono_literals;
using Reason = TlsError::Reason;

TlsPort tls_port(const std::string& cert, bool auth_clients = false, std::vector<std::string> extra = {}) {
  return TlsPort{cert, pki().server_key, pki().ca, auth_clients, std::move(extra)};
}

// The shared TLS server: a certificate for localhost and 127.0.0.1 signed by the test CA.
RedisServer& tls_server() {
  static RedisServer s({}, tls_port(pki().server));
  return s;
}

Options tls_opts(const RedisServer& s, const std::string& host = "127.0.0.1", Notify notify = Notify::publish) {
  Options o = opts_for(s, notify);
  o.url = s.tls_url(host);
  o.tls.ca_file = pki().ca;
  return o;
}

void expect_refused(const RedisServer& s, const Options& o, Reason want, const std::string& msg_part) {
  for (Notify n : {Notify::publish, Notify::poll}) {
    Options with = o;
    with.notify = n;
    std::string name = unique_name("tls-refused");
    try {
      Client c(with);
      FairLock lock(c, name);
      (void)lock.try_lock_for(5s);
      ADD_FAILURE() << "no TlsError";
    } catch (const TlsError& e) {
      EXPECT_EQ(e.reason(), want) << e.what();
      EXPECT_NE(std::string(e.what()).find(msg_part), std::string::npos) << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "not a TlsError (notify " << static_cast<int>(n) << "): " << e.what();
    }
    EXPECT_EQ(keys_of(s, name), "");  // nothing queued, nothing held
  }
}

TEST(Tls, LockAndSemaphoreWorkOverTls) {
  Client client(tls_opts(tls_server()));
  std::string name = unique_name("tls-lock");
  FairLock lock(client, name);
  lock.lock();
  std::uint64_t first = lock.fence();
  EXPECT_EQ(lock.release(), Released::released);
  lock.lock();
  EXPECT_GT(lock.fence(), first);
  lock.unlock();

  Options by_name = tls_opts(tls_server(), "localhost");  // verified by DNS name too
  by_name.connect_timeout = 10s;                          // (its constructor waits up to this for its subscriber)
  Client other(by_name);
  std::string sem = unique_name("tls-sem");
  FairSemaphore a(client, sem, 2), b(other, sem, 2), c(other, sem, 2);
  a.lock();
  b.lock();
  EXPECT_FALSE(c.try_lock());
  std::thread waiter([&] { EXPECT_TRUE(c.try_lock_for(20s)); });
  ASSERT_TRUE(eventually([&] { return zcard(tls_server(), sem, "q") == 1; }));
  a.unlock();
  waiter.join();
  EXPECT_TRUE(c.owns_lock());
  b.unlock();
  c.unlock();
  EXPECT_GE(other.stats().wakes_signal, 1u);  // the handoff came through the TLS subscriber
}

// Asynchronous waits ride the same TLS connections: batched asks, the
// handoff signal through the TLS subscriber, the callback on the async thread.
TEST(Tls, AsyncWaitsAreGrantedInOrderOverTls) {
  Client client(tls_opts(tls_server()));
  const std::string name = unique_name("tls-async");
  FairLock holder(client, name);
  holder.lock();
  constexpr int kWaiters = 50;
  std::vector<std::unique_ptr<FairLock>> locks;
  std::vector<std::future<std::uint64_t>> fences;
  for (int i = 0; i < kWaiters; ++i) {
    locks.push_back(std::make_unique<FairLock>(client, name));
    fences.push_back(locks.back()->lock_future(60s));
  }
  ASSERT_TRUE(eventually([&] { return zcard(tls_server(), name, "q") == kWaiters; }));
  std::uint64_t last = holder.fence();
  holder.unlock();
  for (int i = 0; i < kWaiters; ++i) {
    const std::uint64_t fence = fences[i].get();  // in call order, each after the one before released
    EXPECT_GT(fence, last);
    last = fence;
    EXPECT_EQ(locks[i]->release(), Released::released);
  }
  EXPECT_GE(client.stats().wakes_signal, 1u);  // (a grant may also be learned from a heartbeat first)
}

TEST(Tls, ProcessesAreServedInArrivalOrderOverTls) {
  Client client(tls_opts(tls_server()));
  std::string name = unique_name("tls-fifo");
  std::string log = "log:" + name;
  FairLock gate(client, name);
  gate.lock();
  std::vector<std::unique_ptr<Child>> kids;
  for (int i = 0; i < 4; ++i) {
    kids.push_back(std::make_unique<Child>(std::vector<std::string>{
        tls_server().tls_url(), "order", name, log, std::to_string(i), pki().ca, std::to_string(tls_server().port())}));
    ASSERT_TRUE(eventually([&] { return zcard(tls_server(), name, "q") == i + 1; }));
  }
  gate.unlock();
  for (auto& k : kids) EXPECT_EQ(k->wait(), 0);
  EXPECT_EQ(tls_server().cmd({"LRANGE", log, "0", "-1"}), "0\n1\n2\n3");
}

TEST(Tls, MutualTlsNeedsAClientCertificateTheServerTrusts) {
  RedisServer s({}, tls_port(pki().server, true));
  Options o = tls_opts(s);
  expect_refused(s, o, Reason::handshake_refused, "client certificate");
  o.tls.cert_file = pki().foreign_client;
  o.tls.key_file = pki().foreign_client_key;
  expect_refused(s, o, Reason::handshake_refused, "refused this client");
  o.tls.cert_file = pki().client;
  o.tls.key_file = pki().client_key;
  Client client(o);
  FairLock lock(client, unique_name("mtls"));
  lock.lock();
  EXPECT_EQ(lock.release(), Released::released);
}

TEST(Tls, EveryCertificateThatDoesNotVerifyIsATypedError) {
  RedisServer wrong_ca({}, tls_port(pki().wrong_ca));
  expect_refused(wrong_ca, tls_opts(wrong_ca), Reason::unknown_ca, "ca_file");
  RedisServer other_name({}, tls_port(pki().other_name));
  expect_refused(other_name, tls_opts(other_name), Reason::name_mismatch, "'127.0.0.1'");
  expect_refused(other_name, tls_opts(other_name, "localhost"), Reason::name_mismatch, "'localhost'");
  RedisServer expired({}, tls_port(pki().expired));
  expect_refused(expired, tls_opts(expired), Reason::expired, "expired");
  RedisServer not_yet({}, tls_port(pki().not_yet));
  expect_refused(not_yet, tls_opts(not_yet), Reason::not_yet_valid, "not yet valid");
  Options system_store = tls_opts(tls_server());
  system_store.tls.ca_file.clear();  // the test CA is not in the system's store
  expect_refused(tls_server(), system_store, Reason::unknown_ca, "ca_file");
}

TEST(Tls, ServerNameSetsTheNameVerified) {
  RedisServer other_name({}, tls_port(pki().other_name));
  Options o = tls_opts(other_name);
  o.tls.server_name = "other.example";
  Client client(o);
  FairLock lock(client, unique_name("sni"));
  lock.lock();
  EXPECT_EQ(lock.release(), Released::released);
}

TEST(Tls, VerificationOptOutAcceptsAnyCertificate) {
  RedisServer wrong_ca({}, tls_port(pki().wrong_ca));
  Options o = tls_opts(wrong_ca);
  o.tls.ca_file.clear();
  o.tls.insecure_skip_verify_testing_only = true;
  Client client(o);
  FairLock lock(client, unique_name("insecure"));
  lock.lock();
  EXPECT_EQ(lock.release(), Released::released);
}

// Either mix-up is told at once, in Options words, by the constructor or
// the first call, whatever the mode.
TEST(Tls, PlainClientOnATlsPortIsTold) {
  for (Notify mode : {Notify::publish, Notify::poll}) {
    Options o = opts_for(tls_server(), mode);
    o.url = "redis://127.0.0.1:" + std::to_string(tls_server().tls_port());
    o.connect_timeout = 5s;
    std::string name = unique_name("plain-on-tls");
    const auto start = std::chrono::steady_clock::now();
    try {
      Client c(o);
      FairLock lock(c, name);
      lock.lock();
      ADD_FAILURE() << "no TlsError";
    } catch (const TlsError& e) {
      EXPECT_EQ(e.reason(), Reason::tls_required) << e.what();
      EXPECT_NE(std::string(e.what()).find("speaks TLS: use rediss:// in Options::url"), std::string::npos) << e.what();
    }
    EXPECT_LT(since(start), 1s);
    EXPECT_EQ(keys_of(tls_server(), name), "");
  }
}

// Redis reads the ClientHello as an inline command and mostly waits for a
// newline: the client asks the port a plain PING after a moment of silence.
// Told within one connect timeout, the constructor included.
TEST(Tls, TlsClientOnAPlainPortIsTold) {
  for (Notify mode : {Notify::publish, Notify::poll}) {
    Options o = tls_opts(tls_server(), "127.0.0.1", mode);
    o.url = "rediss://127.0.0.1:" + std::to_string(tls_server().port());
    o.connect_timeout = 1s;
    std::string name = unique_name("tls-on-plain");
    const auto start = std::chrono::steady_clock::now();
    try {
      Client c(o);
      ADD_FAILURE() << "the constructor did not throw";
    } catch (const TlsError& e) {
      EXPECT_EQ(e.reason(), Reason::not_tls) << e.what();
      EXPECT_NE(std::string(e.what()).find("does not speak TLS: use redis:// in Options::url"), std::string::npos)
          << e.what();
      EXPECT_EQ(std::string(e.what()).find("within connect_timeout"), std::string::npos) << e.what();
    }
    EXPECT_LT(since(start), 2500ms);
    EXPECT_EQ(keys_of(tls_server(), name), "");
  }
}

TEST(Tls, MinimumVersionTheServerLacksIsRefused) {
  RedisServer s({}, tls_port(pki().server, false, {"--tls-protocols", "TLSv1.2"}));
  Options o = tls_opts(s);
  o.tls.min_version = TlsVersion::v1_3;
  expect_refused(s, o, Reason::handshake_refused, "TLS version");
  o.tls.min_version = TlsVersion::v1_2;
  Client client(o);
  FairLock lock(client, unique_name("tls12"));
  lock.lock();
  EXPECT_EQ(lock.release(), Released::released);
}

TEST(Tls, BadTlsSettingsAreTypedErrors) {
  auto reason_of = [](const Options& o) {
    try {
      Client c(o);
    } catch (const TlsError& e) {
      return e.reason();
    }
    ADD_FAILURE() << "no TlsError";
    return Reason::untrusted;
  };
  Options o = tls_opts(tls_server());
  o.tls.ca_file = pki().dir + "/missing.crt";
  EXPECT_EQ(reason_of(o), Reason::bad_config);
  o.tls.ca_file = pki().dir + "/ca.db/index.txt";  // not a certificate
  EXPECT_EQ(reason_of(o), Reason::bad_config);
  o = tls_opts(tls_server());
  o.tls.ca_dir = pki().dir + "/missing";
  EXPECT_EQ(reason_of(o), Reason::bad_config);
  o = tls_opts(tls_server());
  o.tls.cert_file = pki().client;
  o.tls.key_file = pki().server_key;  // not the certificate's key
  EXPECT_EQ(reason_of(o), Reason::bad_config);
  o.tls.key_file.clear();
  EXPECT_THROW(Client{o}, std::invalid_argument);
  o = tls_opts(tls_server());
  o.url = tls_server().url();  // TLS settings on a redis:// URL
  EXPECT_THROW(Client{o}, std::invalid_argument);
}

TEST(Tls, KilledConnectionsAreReplacedOverTls) {
  Options o = tls_opts(tls_server());
  Client holder_client(o), waiter_client(o);
  std::string name = unique_name("tls-kill");
  LockOptions lo;
  lo.lease = 10s;
  FairLock held(holder_client, name, lo);
  held.lock();
  FairLock waiter(waiter_client, name);
  std::thread t([&] { EXPECT_TRUE(waiter.try_lock_for(30s)); });
  ASSERT_TRUE(eventually([&] { return zcard(tls_server(), name, "q") == 1; }));
  for (const char* type : {"normal", "pubsub"}) tls_server().cmd({"CLIENT", "KILL", "TYPE", type});
  EXPECT_EQ(held.release(), Released::released);  // on a fresh connection
  t.join();
  EXPECT_TRUE(waiter.owns_lock());
  EXPECT_GT(waiter.fence(), held.fence());
  waiter.unlock();
  EXPECT_GE(holder_client.stats().reconnects + waiter_client.stats().reconnects, 1u);
}

// A paused TLS server answers no handshake: a new connection times out with
// no_handshake, which is not a wrong setup (the Client's constructor does
// not refuse, and a queued wait retries it as it retries an unreachable
// server). Once the server is resumed, all works.
TEST(Tls, APausedServerIsNotAWrongSetup) {
  RedisServer s({}, tls_port(pki().server));
  Options o = tls_opts(s);
  o.connect_timeout = 300ms;
  o.command_timeout = 300ms;
  std::string name = unique_name("tls-paused");
  s.pause();
  std::unique_ptr<Client> client;
  ASSERT_NO_THROW(client = std::make_unique<Client>(o));  // its subscriber's handshake timed out
  FairLock lock(*client, name);
  try {
    (void)lock.try_lock();  // the first call of a wait is not retried
    ADD_FAILURE() << "no error from a paused server";
  } catch (const TlsError& e) {
    EXPECT_EQ(e.reason(), Reason::no_handshake) << e.what();
  }
  s.resume();
  EXPECT_TRUE(lock.try_lock_for(30s));
  EXPECT_EQ(lock.release(), Released::released);
}

int cli_status(const std::vector<std::string>& args, std::string* output = nullptr) {
  Child c(FAIRLOCK_CLI_PATH, args, true);
  std::string out = c.rest();
  if (output) *output = out;
  return c.wait();
}

TEST(Tls, CommandLineFlagsFollowRedisCli) {
  const std::string port = std::to_string(tls_server().tls_port());
  const std::string name = unique_name("tls-cli");
  EXPECT_EQ(cli_status({"--url", tls_server().tls_url(), "--cacert", pki().ca, "run", name, "--", "true"}), 0);
  EXPECT_EQ(cli_status({"--url", "redis://localhost:" + port, "--tls", "--cacert", pki().ca, "status", name}), 0);
  std::string out;
  EXPECT_EQ(cli_status({"--url", tls_server().tls_url(), "run", name, "--", "true"}, &out), 78);  // system store
  EXPECT_NE(out.find("does not verify"), std::string::npos) << out;
  EXPECT_NE(out.find("give the CA that signed it in --cacert)"), std::string::npos) << out;  // the flag, once
  EXPECT_EQ(cli_status({"--url", tls_server().tls_url(), "--insecure", "status", name}), 0);
  EXPECT_EQ(cli_status({"--url", tls_server().tls_url(), "--tls-min-version", "1.4", "status", name}), 64);
  EXPECT_EQ(cli_status({"--url", tls_server().url(), "--cacert", pki().ca, "status", name}), 64);  // plain URL
  // The same settings from the environment.
  Child env_run("/bin/sh",
                {"-c", "FAIRLOCK_CACERT=" + pki().ca + " exec " + FAIRLOCK_CLI_PATH + " --url " +
                           tls_server().tls_url() + " run " + name + " -- true"},
                true);
  env_run.rest();
  EXPECT_EQ(env_run.wait(), 0);

  RedisServer mutual({}, tls_port(pki().server, true));
  const std::vector<std::string> base{"--url", mutual.tls_url(), "--cacert", pki().ca};
  std::vector<std::string> with_cert = base;
  for (const std::string& a : {std::string("--cert"), pki().client, std::string("--key"), pki().client_key}) {
    with_cert.push_back(a);
  }
  with_cert.insert(with_cert.end(), {"run", name, "--", "true"});
  EXPECT_EQ(cli_status(with_cert), 0);
  std::vector<std::string> without = base;
  without.insert(without.end(), {"run", name, "--", "true"});
  EXPECT_EQ(cli_status(without, &out), 78);
  EXPECT_NE(out.find("client certificate"), std::string::npos) << out;
  EXPECT_EQ(keys_of(mutual, name), key(name, "seq"));  // the first run's fences only
}

#ifdef FAIRLOCK_TLS_EXAMPLE_PATH
// The README's promise: a rediss:// URL and a CA file are enough.
TEST(Tls, TheExampleReachesATlsServerWithAUrlAndACaFile) {
  Child ok(FAIRLOCK_TLS_EXAMPLE_PATH, {tls_server().tls_url("localhost"), pki().ca}, true);
  EXPECT_NE(ok.rest().find("holding orders:42 over TLS with fence"), std::string::npos);
  EXPECT_EQ(ok.wait(), 0);
  Child wrong(FAIRLOCK_TLS_EXAMPLE_PATH, {tls_server().tls_url(), pki().other_ca}, true);
  EXPECT_NE(wrong.rest().find("does not verify"), std::string::npos);
  EXPECT_EQ(wrong.wait(), 1);
}
#endif

// A server that closes the connection while a large command is being
// written: the write fails with ConnectionError; it never raises SIGPIPE
// (whose default action would end this process).
TEST(Tls, AServerGoneAwayIsAnErrorNeverASignal) {
  struct sigaction dfl {
  }, old{};
  dfl.sa_handler = SIG_DFL;
  ::sigaction(SIGPIPE, &dfl, &old);
  auto tls = std::make_shared<const detail::TlsContext>(tls_opts(tls_server()).tls);
  for (bool over_tls : {false, true}) {
    detail::Target t{detail::parse_url(over_tls ? tls_server().tls_url() : tls_server().url()),
                     over_tls ? tls : nullptr, 2000ms, 2000ms};
    detail::Connection c(t);
    const std::string victim = over_tls ? "victim-tls" : "victim-plain";
    c.command({"CLIENT", "SETNAME", victim});
    std::string id = tls_server().cmd({"CLIENT", "LIST"});
    tls_server().cmd({"CLIENT", "KILL", "SKIPME", "yes", "TYPE", "normal"});
    const std::string big(4 << 20, 'x');
    EXPECT_THROW(
        {
          for (int i = 0; i < 16; ++i) c.command({"SET", "sigpipe-probe", big});
        },
        ConnectionError);
  }
  ::sigaction(SIGPIPE, &old, nullptr);
}

}  // namespace
}  // namespace fairlock::test
