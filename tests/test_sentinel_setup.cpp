// Sentinel setups of issue 34 against real sets (sentinel_set.h): a stale
// sentinel first in the URL, one that names a replica, is got past by ROLE;
// sentinels with a password of their own (Options::sentinel; the URL's
// credentials are the data nodes') are reached with it, and a wrong password
// for either is AccessDenied at once.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>

#include "fairlock/fairlock.h"
#include "sentinel_set.h"
#include "test_cli_util.h"
#include "test_util.h"

namespace fairlock::test {
namespace {

using namespace std::chrono_literals;

// Generous on 2 loaded cores: a lock on an idle name takes milliseconds.
constexpr std::chrono::milliseconds kLockBound{20000};
// A refused setup is told at once: well under a connect timeout per sentinel.
constexpr std::chrono::milliseconds kRefusedBound{10000};

// `url` with `first` ("host:port") first in its list of sentinels, and
// `credentials` ("[user:]password") for the data nodes if not empty.
std::string edited_url(std::string url, const std::string& first, const std::string& credentials = "") {
  const auto hosts = url.find("://") + 3;
  if (!first.empty()) url.insert(hosts, first + ",");
  if (!credentials.empty()) url.insert(hosts, credentials + "@");
  return url;
}

std::string address(int port) { return "127.0.0.1:" + std::to_string(port); }

Options options_for(const std::string& url) {
  Options o;
  o.url = url;
  o.liveness_ttl = 3000ms;
  return o;
}

std::string named_by(const RedisServer& sentinel, const SentinelSet& set) {
  return sentinel.cmd({"SENTINEL", "GET-MASTER-ADDR-BY-NAME", set.master_name()});
}

// How many errors of `code` (e.g. READONLY) the server answered (INFO errorstats).
long long errors_of(const RedisServer& s, const std::string& code) {
  const std::string info = s.cmd({"INFO", "errorstats"});
  const auto at = info.find("errorstat_" + code + ":count=");
  return at == std::string::npos ? 0 : std::stoll(info.substr(at + code.size() + 17));
}

// Through `o`: a lock is granted on the set's master (its keys are there
// while held).
void expect_lock_on_the_master(SentinelSet& set, const Options& o) {
  const std::string name = unique_name("sentinel-setup");
  Client c(o);
  FairLock l(c, name);
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(l.try_lock_for(kLockBound));
  EXPECT_LT(since(t0), kLockBound);
  EXPECT_GT(l.fence(), 0u);
  EXPECT_NE(keys_of(set.node(set.master_index()), name), "") << "no key of the grant on the master";
  EXPECT_EQ(l.release(), Released::released);
}

// The `fairlock` command through `url` runs a command holding a turn.
void expect_cli_runs(const std::string& url) {
  const CliResult r = run_cli({"run", unique_name("sentinel-setup-cli"), "echo", "ran"}, url);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("ran"), std::string::npos) << r.output;
}

// A stale sentinel, first in the URL, names a replica (node 1): the library
// asks it, finds by ROLE that the address is no master, and takes the one
// the next sentinel names. The replica ran no script and answered no write
// with READONLY; the stale sentinel still names it at the end.
TEST(SentinelSetup, AStaleSentinelNamingAReplicaIsGotPastByRole) {
  SentinelSet set;
  RedisServer& replica = set.node(1);
  const std::string replica_address = "127.0.0.1\n" + std::to_string(set.data_port(1));
  std::unique_ptr<RedisServer> stale = set.stale_sentinel(set.data_port(1));
  ASSERT_EQ(named_by(*stale, set), replica_address);
  const long long roles_before = command_calls(replica, "role");
  const std::string url = edited_url(set.url(), address(stale->port()));
  ASSERT_NO_FATAL_FAILURE(expect_lock_on_the_master(set, options_for(url)));
  expect_cli_runs(url);
  EXPECT_GE(command_calls(replica, "role"), roles_before + 2) << "the replica's ROLE was not asked (client, CLI)";
  EXPECT_EQ(script_calls(replica), 0);
  EXPECT_EQ(errors_of(replica, "READONLY"), 0);
  EXPECT_EQ(named_by(*stale, set), replica_address) << "the sentinel was not stale throughout";
}

// A loopback port that refuses connections (bound, never listening) while
// this lives: the address of a master that died.
struct DeadPort {
  DeadPort() : fd(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), len) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      throw std::runtime_error("DeadPort: no port");
    }
    port = ntohs(a.sin_port);
  }
  ~DeadPort() { ::close(fd); }
  DeadPort(const DeadPort&) = delete;
  DeadPort& operator=(const DeadPort&) = delete;
  int fd;
  int port = 0;
};

// A stale sentinel, first in the URL, names a dead master: the address is
// skipped when it refuses, and the next sentinel asked (before the fix, every
// attempt asked the stale one first and connected to the dead port for ever).
TEST(SentinelSetup, AStaleSentinelNamingADeadAddressIsGotPast) {
  SentinelSet set;
  const DeadPort dead;
  std::unique_ptr<RedisServer> stale = set.stale_sentinel(dead.port);
  ASSERT_EQ(named_by(*stale, set), "127.0.0.1\n" + std::to_string(dead.port));
  const std::string url = edited_url(set.url(), address(stale->port()));
  ASSERT_NO_FATAL_FAILURE(expect_lock_on_the_master(set, options_for(url)));
  expect_cli_runs(url);
}

constexpr const char* kDataPassword = "data-secret";
constexpr const char* kSentinelPassword = "sentinel-secret";

SentinelSetOptions with_passwords() {
  SentinelSetOptions so;
  so.data_password = kDataPassword;
  so.sentinel_password = kSentinelPassword;
  return so;
}

// Through the set with `data_password` in the URL, `sentinel_password` in
// Options::sentinel (none if empty).
Options with_credentials(const SentinelSet& set, const std::string& data_password,
                         const std::string& sentinel_password) {
  Options o = options_for(edited_url(set.url(), "", data_password));
  o.sentinel.password = sentinel_password;
  return o;
}

// Client's constructor throws AccessDenied (a setup error), at once; a
// sentinel's refusal names Options::sentinel, a data node's does not.
void expect_access_denied(const Options& o, const std::string& what, bool by_a_sentinel) {
  const auto t0 = std::chrono::steady_clock::now();
  try {
    Client c(o);
    ADD_FAILURE() << what << ": a client was made";
  } catch (const AccessDenied& e) {
    EXPECT_TRUE(is_setup_error(e)) << what;
    EXPECT_EQ(std::string(e.what()).find("Options::sentinel") != std::string::npos, by_a_sentinel) << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": not AccessDenied: " << e.what();
  }
  EXPECT_LT(since(t0), kRefusedBound) << what;
}

// What a client that gives no password is answered.
std::string unauthenticated_ping(const RedisServer& s) {
  Reply r = command_reply(s.port(), {"PING"}, kRefusedBound);
  return r ? reply_text(r.get()) : "no reply";
}

// The sentinels' password in Options::sentinel and the data nodes' in the
// URL (each refuses a client without its password): a lock is granted on
// the master.
TEST(SentinelSetup, SentinelsAndDataNodesWithPasswordsOfTheirOwn) {
  SentinelSet set(with_passwords());
  for (const RedisServer* s : {&set.node(0), &set.sentinel(0)})
    EXPECT_EQ(unauthenticated_ping(*s).rfind("ERR:NOAUTH", 0), 0u) << unauthenticated_ping(*s);
  expect_lock_on_the_master(set, with_credentials(set, kDataPassword, kSentinelPassword));
}

// The data nodes' password right, the sentinels' wrong, missing, or the data
// nodes' given to the sentinels (and theirs in the URL): AccessDenied.
TEST(SentinelSetup, AWrongSentinelPasswordIsAccessDeniedAtOnce) {
  SentinelSet set(with_passwords());
  expect_access_denied(with_credentials(set, kDataPassword, "wrong"), "wrong sentinel password", true);
  expect_access_denied(with_credentials(set, kDataPassword, ""), "no sentinel password", true);
  expect_access_denied(with_credentials(set, kSentinelPassword, kDataPassword), "the passwords swapped", true);
  // The `fairlock` command without $FAIRLOCK_SENTINEL_PASSWORD: refused at
  // once (77: wrong user or password), in the command's words.
  const auto t0 = std::chrono::steady_clock::now();
  const CliResult r =
      run_cli({"run", unique_name("sentinel-setup-cli"), "true"}, with_credentials(set, kDataPassword, "").url);
  EXPECT_EQ(r.status, 77) << r.output;
  EXPECT_NE(r.output.find("$FAIRLOCK_SENTINEL_PASSWORD"), std::string::npos) << r.output;
  EXPECT_LT(since(t0), kRefusedBound);
}

// The command takes the sentinels' password from $FAIRLOCK_SENTINEL_PASSWORD
// (never from its arguments), the data nodes' from the URL.
TEST(SentinelSetup, TheCommandTakesTheSentinelsPasswordFromTheEnvironment) {
  SentinelSet set(with_passwords());
  const ScopedEnv password("FAIRLOCK_SENTINEL_PASSWORD", kSentinelPassword);
  expect_cli_runs(with_credentials(set, kDataPassword, "").url);
}

// The sentinels' password right, the data nodes' wrong or missing: AccessDenied.
TEST(SentinelSetup, AWrongDataPasswordIsAccessDeniedAtOnce) {
  SentinelSet set(with_passwords());
  expect_access_denied(with_credentials(set, "wrong", kSentinelPassword), "wrong data password", false);
  expect_access_denied(with_credentials(set, "", kSentinelPassword), "no data password", false);
}

}  // namespace
}  // namespace fairlock::test
