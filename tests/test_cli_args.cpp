// The `fairlock` command line as shell users write it: what belongs to the
// command, short and flock-style options, options a subcommand does not take.
#include <gtest/gtest.h>

#include "test_cli_util.h"

namespace fairlock::test {
namespace {

TEST(CliArgs, EverythingAfterTheNameBelongsToTheCommand) {
  const std::string name = unique_name("cli-args");
  // Options after NAME are the command's, --version and -w included.
  CliResult r = run_cli({"run", name, "sh", "-c", "echo \"$FAIRLOCK_NAME:$*\"", "sh", "--version", "-w", "1", "-h"});
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output, name + ":--version -w 1 -h\n");
  // Options before NAME are fairlock's; one "--" after NAME is dropped.
  r = run_cli({"run", "-w", "1", name, "--", "sh", "-c", "echo \"$FAIRLOCK_NAME:$*\"", "sh", "--", "x"});
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output, name + ":-- x\n");
  r = run_cli({"run", "-nv", "-E", "3", "--lease=2s", "-p2", name, "true"});  // clusters, attached values
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(keys_of(server(), name), key(name, "seq"));
}

TEST(CliArgs, GlobalOptionsGoBeforeOrAfterTheSubcommandWord) {
  const std::string name = unique_name("cli-global");
  Child c(FAIRLOCK_CLI_PATH, {"run", "-u", server().url(), "--prefix", "other", name, "true"}, true);
  EXPECT_EQ(c.wait(), 0);
  Child d(FAIRLOCK_CLI_PATH, {"--prefix=other", "status", "--url", server().url(), "--json", name}, true);
  EXPECT_NE(d.rest().find("\"name\":"), std::string::npos);
  EXPECT_EQ(d.wait(), 0);
  Child e(FAIRLOCK_CLI_PATH, {"--url", "redis://127.0.0.1:1", "--url", server().url(), "list", "--json", name}, true);
  EXPECT_EQ(e.rest(), "[]\n");
  EXPECT_EQ(e.wait(), 0);
}

TEST(CliArgs, OptionsASubcommandDoesNotTakeAreUsageErrorsNamingIt) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"status", "--wait", "5", "x"}, "fairlock status: status takes no option --wait"},
      {{"status", "--permits", "7", "x"}, "fairlock status: status takes no option --permits"},
      {{"run", "--json", "x", "true"}, "fairlock run: run takes no option --json"},
      {{"list", "-n"}, "fairlock list: list takes no option -n"},
      {{"evict", "--count", "1", "x", "t"}, "fairlock evict: evict takes no option --count"},
      {{"status", "--version"}, "fairlock status: --version goes before the subcommand"},
      {{"--wait", "1", "run", "x", "true"}, "fairlock: --wait is an option of a subcommand"},
      {{"run", "--bogus", "x", "true"}, "fairlock run: unknown option --bogus"},
      {{"run", "-w", "1", "-n", "x", "true"}, "one at most"},
      {{"run", "-E", "0", "x", "true"}, "-E/--conflict-exit-code: expected an integer in [1, 255]"},
      {{"run", "-E", "256", "x", "true"}, "[1, 255]"},
      {{"run", "-w", "-1", "x", "true"}, "-w/--timeout: must be 0 or more"},
      {{"run", "--lease", "99ms", "x", "true"}, "--lease: at least 100ms"},
  };
  for (const auto& [args, message] : cases) {
    CliResult r = run_cli(args);
    EXPECT_EQ(r.status, 64) << args[0] << " " << args[1] << ": " << r.output;
    EXPECT_NE(r.output.find(message), std::string::npos) << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
  }
  EXPECT_EQ(run_cli({"run", "--lease", "100ms", unique_name("cli-lease"), "true"}).status, 0);
}

TEST(CliArgs, ListAlignsLongNamesAndWritesJson) {
  Client client(opts_for(server()));
  const std::string tag = unique_name("cli-listj");
  const std::string longer = tag + std::string(60, 'x'), odd = tag + "\"q\"";
  FairLock a(client, longer), b(client, odd);
  a.lock();
  b.lock();
  CliResult t = run_cli({"list", tag + "*"});
  EXPECT_EQ(t.status, 0);
  std::istringstream in(t.output);
  std::string header, first, second;
  std::getline(in, header);
  std::getline(in, first);
  std::getline(in, second);
  ASSERT_EQ(first.size(), header.size()) << t.output;
  EXPECT_EQ(first[header.find("HOLDERS") + 6], '1') << t.output;  // counts under their heading
  EXPECT_EQ(second.size(), header.size()) << t.output;
  EXPECT_NE(t.output.find(longer + "  "), std::string::npos) << t.output;  // not cut
  CliResult j = run_cli({"list", "--json", tag + "*"});
  EXPECT_EQ(j.status, 0);
  EXPECT_NE(j.output.find("{\"name\":\"" + longer + "\",\"holders\":1,\"waiters\":0,\"permits\":1}"), std::string::npos)
      << j.output;
  EXPECT_NE(j.output.find("\"name\":\"" + tag + "\\\"q\\\"\""), std::string::npos) << j.output;
  EXPECT_EQ(j.output.front(), '[');
  a.unlock();
  b.unlock();
}

TEST(CliArgs, EachSubcommandsHelpStatesItsDefaults) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> expected = {
      {"run", {"lease 10s", "wait forever", "liveness 5s", "permits 1", "-n, --nonblock", "-w, --timeout", "75"}},
      {"status", {"--json", "#0"}},
      {"list", {"--json", "PATTERN (default *)"}},
      {"watch", {"interval 1s", "count: until interrupted"}},
      {"evict", {"TOKEN", "status 1"}},
  };
  for (const auto& [sub, words] : expected) {
    CliResult h = run_cli({sub, "--help"});
    EXPECT_EQ(h.status, 0);
    for (const auto& w : words) EXPECT_NE(h.output.find(w), std::string::npos) << sub << ": " << w << "\n" << h.output;
  }
}

TEST(CliArgs, EvictWithSomethingThatIsNotATokenIsStatus1) {
  CliResult r = run_cli({"evict", unique_name("cli-evict-bad"), "not a token"});
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("no holder or waiter"), std::string::npos) << r.output;
}

// The sentinels' credentials in the environment are for Sentinel URLs only
// (like the TLS variables for TLS URLs): set in a shell profile, they do
// not break the command against a plain server.
TEST(CliArgs, SentinelCredentialsInTheEnvironmentLeaveOtherUrlsAlone) {
  const ScopedEnv user("FAIRLOCK_SENTINEL_USER", "someone");
  const ScopedEnv password("FAIRLOCK_SENTINEL_PASSWORD", "secret");
  const CliResult r = run_cli({"run", unique_name("cli-sentinel-env"), "echo", "ran"});
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("ran"), std::string::npos) << r.output;
}

// A bad Redis Cluster URL is a usage error (64) naming --url, from the
// command line or from $FAIRLOCK_URL.
TEST(CliArgs, BadClusterUrlsAreUsageErrors) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"redis-cluster://127.0.0.1:1,,127.0.0.1:2", "an empty host in the list"},
      {"redis-cluster://127.0.0.1:1/2", "Redis Cluster has only database 0"},
      {"rediss-cluster://127.0.0.1:1#m", "no #master"},
      {"redis-cluster://", "names at least one node"},
  };
  for (const auto& [url, words] : cases) {
    const CliResult r = run_cli({"status", "x"}, url);
    EXPECT_EQ(r.status, 64) << url << ": " << r.output;
    EXPECT_NE(r.output.find("--url"), std::string::npos) << url << ": " << r.output;
    EXPECT_NE(r.output.find(words), std::string::npos) << url << ": " << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
  }
  const ScopedEnv env("FAIRLOCK_URL", "redis-cluster://127.0.0.1:1/2");
  Child c(FAIRLOCK_CLI_PATH, {"status", "x"}, true);
  const std::string out = c.rest();
  EXPECT_EQ(c.wait(), 64) << out;
  EXPECT_NE(out.find("Redis Cluster has only database 0"), std::string::npos) << out;
}

// --tls makes redis-cluster:// rediss-cluster://, as it does redis://: the
// command then behaves as with rediss-cluster:// written out. Without it,
// TLS options on redis-cluster:// are refused as on redis://.
TEST(CliArgs, TlsTurnsAClusterUrlIntoATlsOne) {
  const TempFile ca;
  const CliResult written = run_cli({"--cacert", ca.path, "status", "x"}, "rediss-cluster://127.0.0.1:1");
  const CliResult turned = run_cli({"--tls", "--cacert", ca.path, "status", "x"}, "redis-cluster://127.0.0.1:1");
  EXPECT_EQ(turned.status, written.status) << turned.output << written.output;
  for (const auto* r : {&written, &turned}) {
    EXPECT_EQ(r->output.find("TLS options need"), std::string::npos) << r->output;
    EXPECT_EQ(r->output.find("--tls needs"), std::string::npos) << r->output;
  }
  const CliResult plain = run_cli({"--cacert", ca.path, "status", "x"}, "redis-cluster://127.0.0.1:1");
  EXPECT_EQ(plain.status, 64) << plain.output;
  EXPECT_NE(plain.output.find("rediss-cluster://"), std::string::npos) << plain.output;
}

// The sentinels' credentials in the environment do not make a cluster URL
// fail any differently (they are for Sentinel URLs only).
TEST(CliArgs, SentinelCredentialsInTheEnvironmentLeaveClusterUrlsAlone) {
  const std::string url = "redis-cluster://127.0.0.1:1";
  const CliResult without = run_cli({"status", "x"}, url);
  const ScopedEnv user("FAIRLOCK_SENTINEL_USER", "someone");
  const ScopedEnv password("FAIRLOCK_SENTINEL_PASSWORD", "secret");
  const CliResult with = run_cli({"status", "x"}, url);
  EXPECT_EQ(with.status, without.status) << with.output << without.output;
  for (const auto* r : {&with, &without}) {
    EXPECT_EQ(r->output.find("entinel"), std::string::npos) << r->output;
    EXPECT_EQ(r->output.find("SENTINEL"), std::string::npos) << r->output;
  }
}

TEST(CliArgs, UsageNamesTheClusterUrl) {
  const CliResult h = run_cli({"--help"});
  EXPECT_EQ(h.status, 0);
  EXPECT_NE(h.output.find("redis-cluster://host1:6379[,host2:6379...]"), std::string::npos) << h.output;
  EXPECT_NE(h.output.find("rediss-cluster://"), std::string::npos) << h.output;
}

}  // namespace
}  // namespace fairlock::test
