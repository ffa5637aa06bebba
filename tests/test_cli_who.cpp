// What the `fairlock` command tells about who holds and who waits, and the
// library's errors in the command's words and statuses.
#include <gtest/gtest.h>

#include <thread>

#include "test_cli_util.h"

namespace fairlock::test {
namespace {

using namespace std::chrono_literals;

TEST(CliWho, StatusNamesTheHostPidAndCommandOfEachHolderAndWaiter) {
  const std::string name = unique_name("cli-who");
  Child holder(FAIRLOCK_CLI_PATH, cli({"run", name, "--", "sh", "-c", "echo held; exec sleep 30"}), true);
  ASSERT_EQ(holder.line(), "held");
  Child waiter(FAIRLOCK_CLI_PATH, cli({"run", name, "true"}), true);
  ASSERT_TRUE(eventually([&] { return zcard(server(), name, "q") == 1; }));
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  const std::string holder_who = std::string(host) + " pid " + std::to_string(holder.pid()) + " (fairlock run " + name +
                                 " -- sh -c echo held; exec sleep 30)";
  const std::string waiter_who =
      std::string(host) + " pid " + std::to_string(waiter.pid()) + " (fairlock run " + name + " -- true)";
  CliResult table = run_cli({"status", name});
  EXPECT_EQ(table.status, 0);
  EXPECT_NE(table.output.find(holder_who + "\n"), std::string::npos) << table.output;
  EXPECT_NE(table.output.find(waiter_who + "\n"), std::string::npos) << table.output;
  CliResult json = run_cli({"status", "--json", name});
  EXPECT_NE(json.output.find("\"pid\":" + std::to_string(holder.pid()) + ",\"description\":\"fairlock run " + name),
            std::string::npos)
      << json.output;
  EXPECT_NE(json.output.find("\"host\":\"" + std::string(host) + "\""), std::string::npos) << json.output;
  holder.kill(SIGTERM);  // forwarded to sleep
  EXPECT_EQ(holder.wait(), 128 + SIGTERM);
  EXPECT_EQ(waiter.wait(), 0);
}

TEST(CliWho, ListShowsEachNamesPermitsAlsoAsJson) {
  Client client(opts_for(server()));
  const std::string name = unique_name("cli-permits");
  FairSemaphore sem(client, name, 3);
  sem.lock();
  CliResult table = run_cli({"list", name});
  EXPECT_NE(table.output.find("PERMITS"), std::string::npos) << table.output;
  std::istringstream lines(table.output);
  std::string header, n;
  std::getline(lines, header);
  int permits = 0, holders = 0, waiters = -1;
  lines >> n >> permits >> holders >> waiters;
  EXPECT_EQ(n, name);
  EXPECT_EQ(permits, 3);
  EXPECT_EQ(holders, 1);
  EXPECT_EQ(waiters, 0);
  CliResult json = run_cli({"list", "--json", name});
  EXPECT_NE(json.output.find("\"waiters\":0,\"permits\":3}"), std::string::npos) << json.output;
}

TEST(CliWho, AnEvictedWaiterEndsWithItsOwnStatus) {
  Client client(opts_for(server()));
  const std::string name = unique_name("cli-evicted");
  FairLock holder(client, name);
  holder.lock();
  Child waiter(FAIRLOCK_CLI_PATH, cli({"run", name, "--", "echo", "ran"}), true);
  ASSERT_TRUE(eventually([&] { return zcard(server(), name, "q") == 1; }));
  const std::string token = client.inspect(name).waiters.at(0).token;
  EXPECT_EQ(run_cli({"evict", name, token}).status, 0);
  const std::string out = waiter.rest();
  EXPECT_EQ(waiter.wait(), 79) << out;
  EXPECT_EQ(out.rfind("fairlock: wait for " + name + " ended", 0), 0u) << out;  // "fairlock: " once
  EXPECT_EQ(out.find("ran"), std::string::npos) << out;                         // the command never ran
  EXPECT_EQ(zcard(server(), name, "q"), 0);                                     // and it did not queue again
  holder.unlock();
}

TEST(CliWho, LibraryErrorsAreToldInTheCommandsWords) {
  const std::string name = unique_name("cli-words");
  CliResult prefix = run_cli({"--prefix", "", "status", name});
  EXPECT_EQ(prefix.status, 64) << prefix.output;
  EXPECT_NE(prefix.output.find("--prefix: must not be empty"), std::string::npos) << prefix.output;
  EXPECT_EQ(prefix.output.find("key_prefix"), std::string::npos) << prefix.output;
  CliResult token = run_cli({"evict", name, "not-a-token"});
  EXPECT_EQ(token.status, 1) << token.output;
  EXPECT_EQ(token.output.find("FLBADARG"), std::string::npos) << token.output;
  EXPECT_NE(token.output.find("not a token"), std::string::npos) << token.output;
}

TEST(CliWho, AWrongPasswordHasItsOwnStatusAndNamesTheUrlFlag) {
  RedisServer locked;
  locked.cmd({"CONFIG", "SET", "requirepass", "right"});
  const std::string base = "127.0.0.1:" + std::to_string(locked.port());
  for (const std::string& url : {"redis://:wrong@" + base, "redis://" + base}) {
    for (std::vector<std::string> args : {std::vector<std::string>{"run", "n", "true"}, {"status", "n"}}) {
      const auto start = std::chrono::steady_clock::now();
      CliResult r = run_cli(args, url);
      const auto took = std::chrono::steady_clock::now() - start;
      EXPECT_EQ(r.status, 77) << url << " " << args[0] << ": " << r.output;
      EXPECT_NE(r.output.find("--url"), std::string::npos) << r.output;
      EXPECT_EQ(r.output.find("Options::"), std::string::npos) << r.output;
      EXPECT_LT(took, 1500ms) << url << " " << args[0];  // known at once (was 2 s in run)
    }
  }
}

}  // namespace
}  // namespace fairlock::test
