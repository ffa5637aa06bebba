// The `fairlock` command, run as a user would: real processes, real server.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "test_cli_util.h"

namespace fairlock::test {
namespace {

using namespace std::chrono_literals;

TEST(Cli, RunPassesNameAndFenceAndTheCommandsStatus) {
  std::string name = unique_name("cli-run");
  CliResult r = run_cli({"run", name, "--", "sh", "-c", "echo \"$FAIRLOCK_NAME $FAIRLOCK_FENCE\"; exit 7"});
  EXPECT_EQ(r.status, 7);
  std::istringstream in(r.output);
  std::string got_name;
  unsigned long long fence = 0;
  in >> got_name >> fence;
  EXPECT_EQ(got_name, name);
  EXPECT_GT(fence, 0u);
  EXPECT_EQ(keys_of(server(), name), key(name, "seq"));  // released
  EXPECT_EQ(run_cli({"run", name, "--", "sh", "-c", "kill -9 $$"}).status, 128 + 9);
  EXPECT_EQ(run_cli({"run", name, "--", "/nonexistent/cmd"}).status, 127);
  EXPECT_EQ(run_cli({"run", name, "true"}).status, 0);  // "--" is optional
}

TEST(Cli, RunSerialisesCommandsInArrivalOrder) {
  Client client(opts_for(server()));
  std::string name = unique_name("cli-order");
  char tmpl[] = "/tmp/fairlock-cli-XXXXXX";
  int fd = ::mkstemp(tmpl);
  ::close(fd);
  std::string log = tmpl;
  FairLock gate(client, name);
  gate.lock();
  std::vector<std::unique_ptr<Child>> kids;
  for (int i = 0; i < 4; ++i) {
    std::string script = "echo start " + std::to_string(i) + " $FAIRLOCK_FENCE >> " + log + "; sleep 0.05; echo end " +
                         std::to_string(i) + " >> " + log;
    kids.push_back(std::make_unique<Child>(FAIRLOCK_CLI_PATH, cli({"run", name, "--", "sh", "-c", script})));
    ASSERT_TRUE(eventually([&] { return zcard(server(), name, "q") == i + 1; }));
  }
  gate.unlock();
  for (auto& k : kids) EXPECT_EQ(k->wait(), 0);
  std::ifstream in(log);
  std::string word;
  int idx = 0;
  unsigned long long fence = 0, last = gate.fence();
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(static_cast<bool>(in >> word >> idx >> fence));
    EXPECT_EQ(word, "start");
    EXPECT_EQ(idx, i);
    EXPECT_GT(fence, last);
    last = fence;
    ASSERT_TRUE(static_cast<bool>(in >> word >> idx));
    EXPECT_EQ(word, "end");  // nobody started before the previous one ended
    EXPECT_EQ(idx, i);
  }
  std::remove(log.c_str());
}

TEST(Cli, WaitTimeoutHasItsOwnStatusAndLeavesNoEntry) {
  Client client(opts_for(server()));
  std::string name = unique_name("cli-timeout");
  FairLock holder(client, name);
  holder.lock();
  CliResult r = run_cli({"run", "--wait", "200ms", name, "--", "true"});
  EXPECT_EQ(r.status, 75);
  EXPECT_NE(r.output.find("no turn"), std::string::npos);
  EXPECT_EQ(zcard(server(), name, "q"), 0);
  holder.unlock();
}

TEST(Cli, SigtermWhileWaitingLeavesTheQueue) {
  Client client(opts_for(server()));
  std::string name = unique_name("cli-sigterm");
  FairLock holder(client, name);
  holder.lock();
  Child waiting(FAIRLOCK_CLI_PATH, cli({"run", name, "--", "true"}));
  ASSERT_TRUE(eventually([&] { return zcard(server(), name, "q") == 1; }));
  waiting.kill(SIGTERM);
  EXPECT_EQ(waiting.wait(), 128 + SIGTERM);
  EXPECT_EQ(zcard(server(), name, "q"), 0);  // (w keeps the process's liveness until the name is idle)
  holder.unlock();
  EXPECT_EQ(keys_of(server(), name), key(name, "seq"));
}

TEST(Cli, SignalsAreForwardedToTheRunningCommand) {
  std::string name = unique_name("cli-forward");
  Child running(FAIRLOCK_CLI_PATH,
                cli({"run", name, "--", "sh", "-c", "trap 'exit 42' TERM; echo ready; while :; do sleep 0.05; done"}));
  ASSERT_EQ(running.line(), "ready");
  running.kill(SIGTERM);
  EXPECT_EQ(running.wait(), 42);
  EXPECT_EQ(keys_of(server(), name), key(name, "seq"));
}

TEST(Cli, LosingTheGrantIsReportedWithItsOwnStatus) {
  Client client(opts_for(server()));
  for (bool kill_on_loss : {false, true}) {
    std::string name = unique_name("cli-lost");
    std::vector<std::string> args{"run"};
    if (kill_on_loss) args.emplace_back("--kill-on-loss");
    // 3 s to run to its end; 30 s when it is to be killed on the loss, which
    // the heartbeat (every 1.7 s) notices however slowly it runs.
    const std::string ticks = kill_on_loss ? "600" : "60";
    for (const std::string& a :
         {name, std::string("--"), std::string("sh"), std::string("-c"),
          "echo ready; i=0; while [ $i -lt " + ticks + " ]; do sleep 0.05; i=$((i+1)); done; echo finished"}) {
      args.push_back(a);
    }
    Child running(FAIRLOCK_CLI_PATH, cli(args), true);
    ASSERT_EQ(running.line(), "ready");
    auto st = client.inspect(name);
    ASSERT_EQ(st.holders.size(), 1u);
    EXPECT_EQ(client.evict(name, st.holders[0].token), Evicted::holder);
    std::string out = running.rest();
    EXPECT_EQ(running.wait(), 76) << out;
    EXPECT_NE(out.find("lost"), std::string::npos) << out;
    EXPECT_EQ(out.find("finished") == std::string::npos, kill_on_loss) << out;
  }
}

TEST(Cli, StatusJsonMatchesTheQueue) {
  Client client(opts_for(server()));
  std::string name = unique_name("cli-status");
  FairLock holder(client, name), w1(client, name), w2(client, name);
  holder.lock();
  std::thread t1([&] { w1.lock(); });
  ASSERT_TRUE(eventually([&] { return zcard(server(), name, "q") == 1; }));
  std::thread t2([&] { w2.lock(); });
  ASSERT_TRUE(eventually([&] { return zcard(server(), name, "q") == 2; }));
  QueueState st = client.inspect(name);
  CliResult r = run_cli({"status", "--json", name});
  EXPECT_EQ(r.status, 0);
  const std::string& j = r.output;
  EXPECT_NE(j.find("\"holder_count\":1"), std::string::npos) << j;
  EXPECT_NE(j.find("\"waiter_count\":2"), std::string::npos) << j;
  EXPECT_NE(j.find("\"permits\":1"), std::string::npos) << j;
  EXPECT_NE(j.find("\"fence\":" + std::to_string(holder.fence())), std::string::npos) << j;
  auto a = j.find(st.waiters[0].token), b = j.find(st.waiters[1].token), h = j.find(st.holders[0].token);
  ASSERT_NE(a, std::string::npos);
  ASSERT_NE(b, std::string::npos);
  EXPECT_LT(h, a);
  EXPECT_LT(a, b);  // waiters in queue order
  EXPECT_NE(j.find("\"position\":1"), std::string::npos);
  CliResult table = run_cli({"status", name});
  EXPECT_EQ(table.status, 0);
  EXPECT_NE(table.output.find("waiters 2"), std::string::npos) << table.output;
  EXPECT_NE(table.output.find(st.holders[0].token), std::string::npos) << table.output;
  holder.unlock();
  t1.join();
  w1.unlock();
  t2.join();
  w2.unlock();
}

TEST(Cli, EvictUnwedgesAQueue) {
  Client client(opts_for(server()));
  std::string name = unique_name("cli-evict");
  Child wedged(helper_path(), {server().url(), "hold", name, "3600000"});
  ASSERT_EQ(wedged.line().rfind("fence ", 0), 0u);
  wedged.kill(SIGSTOP);  // alive but stuck: its heartbeat stops too, but the lease is an hour
  FairLock next(client, name);
  std::atomic<bool> got{false};
  std::thread t([&] { got = next.try_lock_for(30s); });
  ASSERT_TRUE(eventually([&] { return zcard(server(), name, "q") == 1; }));
  std::string token = client.inspect(name).holders.at(0).token;
  CliResult r = run_cli({"evict", name, token});
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.output.find("evicted holder"), std::string::npos);
  t.join();
  EXPECT_TRUE(got.load());
  EXPECT_EQ(run_cli({"evict", name, token}).status, 1);
  next.unlock();
  wedged.kill(SIGCONT);
}

TEST(Cli, ListFindsActiveNames) {
  Client client(opts_for(server()));
  std::string name = unique_name("cli-list");
  FairLock holder(client, name);
  holder.lock();
  CliResult r = run_cli({"list", "cli-list*"});
  EXPECT_EQ(r.status, 0);
  std::istringstream in(r.output);
  std::string line;
  bool found = false;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string n;
    int ps = -1, hs = -1, ws = -1;
    f >> n >> ps >> hs >> ws;
    if (n == name) found = ps == 1 && hs == 1 && ws == 0;
  }
  EXPECT_TRUE(found) << r.output;
  holder.unlock();
  EXPECT_EQ(run_cli({"list", "cli-list*"}).output.find(name), std::string::npos);
}

TEST(Cli, WatchPrintsPlainFramesWhenNotATerminal) {
  std::string name = unique_name("cli-watch");
  CliResult r = run_cli({"watch", "--interval", "50ms", "--count", "3", name});
  EXPECT_EQ(r.status, 0);
  std::size_t frames = 0;
  for (std::size_t at = r.output.find("name "); at != std::string::npos; at = r.output.find("name ", at + 1)) ++frames;
  EXPECT_EQ(frames, 3u);
  EXPECT_EQ(r.output.find("\033["), std::string::npos);  // no terminal escapes
}

TEST(Cli, UsageErrorsAreOneLineAndStatus64) {
  for (std::vector<std::string> args :
       std::vector<std::vector<std::string>>{{"run", "--wait", "soon", "x", "--", "true"},
                                             {"run", "--lease", "-1s", "x", "true"},
                                             {"status"},
                                             {"frobnicate"},
                                             {"status", "--bogus", "x"},
                                             {"run", "--permits", "0", "x", "true"},
                                             {"status", "a{b"}}) {
    CliResult r = run_cli(args);
    EXPECT_EQ(r.status, 64) << args[0] << " " << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
  }
  CliResult v = run_cli({"--version"});
  EXPECT_EQ(v.status, 0);
  EXPECT_EQ(v.output, std::string("fairlock ") + FAIRLOCK_VERSION_STRING + "\n");
  for (const char* sub : {"run", "status", "list", "watch", "evict"}) {
    CliResult h = run_cli({sub, "--help"});
    EXPECT_EQ(h.status, 0);
    EXPECT_NE(h.output.find(std::string(" ") + sub + " "), std::string::npos) << h.output;
  }
}

TEST(Cli, UnreachableServerIsStatus69) {
  Child c(FAIRLOCK_CLI_PATH, {"--url", "redis://127.0.0.1:1", "status", "x"}, true);
  std::string out = c.rest();
  EXPECT_EQ(c.wait(), 69);
  EXPECT_NE(out.find("cannot connect"), std::string::npos);
}

}  // namespace
}  // namespace fairlock::test
