// `fairlock run` as flock(1) and etcdctl lock users expect it: -n, -w, -E,
// progress, holding without a command (and the shell-section idioms built on
// it), the command's status kept, --wait a bound whatever the server does.
#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "test_cli_util.h"

namespace fairlock::test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

TEST(CliRun, NonblockAndTimeoutAsFlock) {
  Client client(opts_for(server()));
  const std::string name = unique_name("cli-nonblock");
  EXPECT_EQ(run_cli({"run", "-n", name, "sh", "-c", "exit 4"}).status, 4);  // free: runs
  FairLock holder(client, name);
  holder.lock();
  for (const auto& option :
       std::vector<std::vector<std::string>>{{"-n"}, {"--nonblock"}, {"-w", "0"}, {"--wait", "0"}}) {
    std::vector<std::string> args{"run"};
    args.insert(args.end(), option.begin(), option.end());
    args.push_back(name);
    args.emplace_back("true");
    CliResult r = run_cli(args);
    EXPECT_EQ(r.status, 75) << option[0] << ": " << r.output;
    EXPECT_NE(r.output.find("no turn"), std::string::npos) << r.output;
  }
  EXPECT_EQ(run_cli({"run", "-n", "-E", "9", name, "true"}).status, 9);
  const auto t0 = Clock::now();
  EXPECT_EQ(run_cli({"run", "-w", "0.3", "--conflict-exit-code=1", name, "true"}).status, 1);
  EXPECT_GE(since(t0).count(), 300);
  EXPECT_EQ(zcard(server(), name, "q"), 0);  // -n never queued, -w left
  holder.unlock();
}

TEST(CliRun, VerboseShowsThePlaceInLineCountedAsStatusCountsIt) {
  Client client(opts_for(server()));
  const std::string name = unique_name("cli-progress");
  FairLock holder(client, name);
  holder.lock();
  Child verbose(FAIRLOCK_CLI_PATH, cli({"run", "-v", name, "true"}), true);
  // The holder is this test's own client: its registration names this process.
  EXPECT_EQ(verbose.line(), "fairlock: " + name + ": waiting, #0 in line (#0 is next); held by " +
                                client.inspect(name).holders.at(0).host + " pid " + std::to_string(::getpid()) + " (" +
                                client.inspect(name).holders.at(0).description + ")");
  Child quiet(FAIRLOCK_CLI_PATH, cli({"run", name, "true"}), true);  // stderr not a terminal, no -v
  ASSERT_TRUE(eventually([&] { return zcard(server(), name, "q") == 2; }));
  CliResult st = run_cli({"status", name});
  EXPECT_NE(st.output.find("\n  #0 "), std::string::npos) << st.output;
  EXPECT_NE(st.output.find("\n  #1 "), std::string::npos) << st.output;
  holder.unlock();
  const std::string rest = verbose.rest();
  EXPECT_EQ(verbose.wait(), 0);
  EXPECT_NE(rest.find(": held, fence "), std::string::npos) << rest;
  EXPECT_EQ(quiet.rest(), "");
  EXPECT_EQ(quiet.wait(), 0);
}

TEST(CliRun, WithoutACommandItHoldsPrintsTheFenceAndReleasesOnASignal) {
  Client client(opts_for(server()));
  const std::string name = unique_name("cli-hold");
  Child held(FAIRLOCK_CLI_PATH, cli({"run", name}));
  const std::string fence = held.line();
  ASSERT_FALSE(fence.empty());
  auto st = client.inspect(name);
  ASSERT_EQ(st.holders.size(), 1u);
  EXPECT_EQ(std::to_string(st.holders[0].fence), fence);
  held.kill(SIGTERM);
  EXPECT_EQ(held.wait(), 0);
  EXPECT_EQ(keys_of(server(), name), key(name, "seq"));  // released
  Child lost(FAIRLOCK_CLI_PATH, cli({"run", name}), true);
  ASSERT_FALSE(lost.line().empty());
  EXPECT_EQ(client.evict(name, client.inspect(name).holders.at(0).token), Evicted::holder);
  EXPECT_EQ(lost.wait(), 76);  // the hold ends when it is lost
}

// A section of a shell script holding NAME, with `fairlock run NAME` as a
// coprocess (bash) or on two FIFOs (POSIX sh), as the README shows them. In
// the section, the lock is held (-n finds it busy); after it, released.
void section_idiom(const std::string& shell, const std::string& script) {
  const std::string name = unique_name("cli-section");
  const std::string fairlock = std::string(FAIRLOCK_CLI_PATH) + " --url " + server().url();
  const std::string prelude = "FAIRLOCK=\"" + fairlock + "\"; NAME=" + name + "\n";
  Child sh(shell, {"-c", prelude + script}, true);
  const std::string out = sh.rest();
  EXPECT_EQ(sh.wait(), 0) << out;
  EXPECT_NE(out.find("fence "), std::string::npos) << out;
  EXPECT_NE(out.find("inside: 75"), std::string::npos) << out;
  EXPECT_NE(out.find("released: 0"), std::string::npos) << out;
  EXPECT_EQ(keys_of(server(), name), key(name, "seq"));
}

TEST(CliRun, ASectionOfABashScriptHoldsTheLock) {
  section_idiom("/bin/bash", R"(
coproc LOCK { exec $FAIRLOCK run "$NAME"; }
lock_pid=$LOCK_PID lock_in=${LOCK[1]}     # bash unsets LOCK* once the coprocess ends
read -r FENCE <&"${LOCK[0]}" || exit 75   # held from here on
echo "fence $FENCE"
$FAIRLOCK run -n "$NAME" true 2>/dev/null; echo "inside: $?"
exec {lock_in}>&-                         # release: fairlock's stdin closes
wait "$lock_pid" || exit
$FAIRLOCK run -n "$NAME" true; echo "released: $?"
)");
}

TEST(CliRun, ASectionOfAPosixShScriptHoldsTheLock) {
  section_idiom("/bin/sh", R"(
dir=$(mktemp -d) && mkfifo "$dir/in" "$dir/out" || exit 70
$FAIRLOCK run "$NAME" <"$dir/in" >"$dir/out" &
lock=$!
exec 8>"$dir/in" 9<"$dir/out"
read -r FENCE <&9 || { wait $lock; exit $?; }   # held from here on
echo "fence $FENCE"
$FAIRLOCK run -n "$NAME" true 2>/dev/null; echo "inside: $?"
exec 8>&- 9<&-                                  # release
wait $lock || exit
rm -r "$dir"
$FAIRLOCK run -n "$NAME" true; echo "released: $?"
)");
}

// r-cli review: Ctrl-C on the script's terminal signals the script's whole
// group; in the POSIX sh section the shell started fairlock with SIGINT
// ignored (an asynchronous list), and the section's own command handles the
// signal and goes on (a migration finishing cleanly). The lock must stay held
// until the section releases it. Fails on 1e19e3d: fairlock takes the ignored
// SIGINT through sigwaitinfo, ends the hold and releases mid-section
// ("inside after INT: 0"). (The sleep only gives fairlock time to misbehave.)
TEST(CliRun, ASectionStaysHeldWhenItsScriptsGroupGetsCtrlC) {
  const std::string name = unique_name("cli-section-int");
  const std::string fairlock = std::string(FAIRLOCK_CLI_PATH) + " --url " + server().url();
  const std::string prelude = "FAIRLOCK=\"" + fairlock + "\"; NAME=" + name + "\n";
  Child sh("/usr/bin/setsid", {"/bin/sh", "-c", prelude + R"(
trap 'echo "script: INT"' INT
dir=$(mktemp -d) && mkfifo "$dir/in" "$dir/out" || exit 70
$FAIRLOCK run "$NAME" <"$dir/in" >"$dir/out" &
lock=$!
exec 8>"$dir/in" 9<"$dir/out"
read -r FENCE <&9 || { wait $lock; exit $?; }   # held from here on
kill -INT 0                                     # as Ctrl-C: the script's group
sleep 1
$FAIRLOCK run -n "$NAME" true 2>/dev/null; echo "inside after INT: $?"
exec 8>&- 9<&-                                  # release
wait $lock; echo "released: $?"
rm -r "$dir"
)"},
           true);
  const std::string out = sh.rest();
  EXPECT_EQ(sh.wait(), 0) << out;
  EXPECT_NE(out.find("inside after INT: 75"), std::string::npos) << out;
  EXPECT_NE(out.find("released: 0"), std::string::npos) << out;
}

// A reader that went away (`| true`, `| head`) is no death: fairlock prints
// its fence into a closed pipe, holds until its stdin ends, releases and
// exits 0 (it died of SIGPIPE, 141, and the hold stayed until its lease).
TEST(CliRun, AClosedStdoutDoesNotKillTheHold) {
  const std::string name = unique_name("cli-sigpipe");
  const std::string fairlock = std::string(FAIRLOCK_CLI_PATH) + " --url " + server().url();
  Child sh("/bin/bash",
           {"-c", "sleep 0.5 | " + fairlock + " run " + name + " | true; echo \"hold: ${PIPESTATUS[1]}\"; " + fairlock +
                      " run -n " + name + " true; echo \"after: $?\""},
           true);
  const std::string out = sh.rest();
  EXPECT_EQ(sh.wait(), 0) << out;
  EXPECT_NE(out.find("hold: 0"), std::string::npos) << out;
  EXPECT_NE(out.find("after: 0"), std::string::npos) << out;  // released, not left to its lease
}

TEST(CliRun, TheCommandsStatusSurvivesAFailedRelease) {
  RedisServer own;
  TempFile stop;
  std::remove(stop.path.c_str());
  const std::string name = unique_name("cli-release-fails");
  Child f(FAIRLOCK_CLI_PATH,
          cli({"run", "--lease", "60s", name, "sh", "-c",
               "echo ready; while [ ! -e " + stop.path + " ]; do sleep 0.02; done; exit 4"},
              own.url()),
          true);
  ASSERT_EQ(f.line(), "ready");
  own.kill();  // the server is gone when the command ends
  const auto ended = std::chrono::steady_clock::now();
  std::ofstream(stop.path) << "\n";
  const std::string out = f.rest();
  EXPECT_EQ(f.wait(), 4) << out;
  EXPECT_NE(out.find("could not release"), std::string::npos) << out;
  EXPECT_LT(since(ended), std::chrono::seconds(20)) << "the exit waited for the release's retries (lease 60 s)";
}

// --wait is a bound even when the server stops answering mid-wait: exit 75
// by the deadline plus the watchdog's margin. One run in CI;
// FAIRLOCK_DEADLINE_RUNS=20 measures the overshoot's p50 and max.
void wait_with_the_server_stopped(std::vector<long long>& overshoot) {
  RedisServer own;
  Client client(opts_for(own));
  const std::string name = unique_name("cli-deadline");
  LockOptions long_lease;
  long_lease.lease = 60s;
  FairLock holder(client, name, long_lease);
  holder.lock();
  const auto t0 = Clock::now();
  Child f(FAIRLOCK_CLI_PATH, cli({"run", "--wait", "2s", name, "true"}, own.url()), true);
  ASSERT_TRUE(eventually([&] { return zcard(own, name, "q") == 1; }));
  own.pause();
  const std::string out = f.rest();
  const int status = f.wait();
  const long long took = since(t0).count();
  own.resume();
  EXPECT_EQ(status, 75) << out;
  EXPECT_NE(out.find("no turn within --wait"), std::string::npos) << out;
  EXPECT_GE(took, 2000);
  EXPECT_LE(took, 2000 + 1500) << "run --wait 2s exited after " << took << " ms";
  overshoot.push_back(took - 2000);
}

// r-cli review: --wait is a bound also when the server has stopped answering
// before fairlock starts (it accepts the connection, then says nothing).
// Fails on 1e19e3d: `run -w 1` exits 75 after ~3.1 s (the Client's
// connect timeout passes before the watchdog is armed); -n after ~3.0 s.
TEST(CliRun, WaitIsABoundWithTheServerStoppedBeforeTheStart) {
  RedisServer own;
  own.pause();
  const auto t0 = Clock::now();
  CliResult r = run_cli({"run", "-w", "1", unique_name("cli-deadline-start"), "true"}, own.url());
  const long long took = since(t0).count();
  // -n's bound says -n (it said "no turn within --wait"): no --wait was given.
  CliResult n = run_cli({"run", "-n", unique_name("cli-deadline-start"), "true"}, own.url());
  own.resume();
  EXPECT_EQ(r.status, 75) << r.output;
  EXPECT_GE(took, 1000);
  EXPECT_LE(took, 1000 + 1500) << "run -w 1 exited after " << took << " ms";
  EXPECT_EQ(n.status, 75) << n.output;
  EXPECT_NE(n.output.find(": no turn (-n: the server does not answer"), std::string::npos) << n.output;
}

// --wait counts from fairlock's start, as its watchdog does: a connection
// that took 300 ms (the server paused meanwhile) used to push the wait's
// deadline 300 ms past the watchdog's, which then cut the wait ("the server
// does not answer") and left its queue entry to lapse with its liveness.
TEST(CliRun, WaitCountsTheConnectionAsTheWatchdogDoes) {
  RedisServer own;
  Client client(opts_for(own));
  const std::string name = unique_name("cli-slow-connect");
  FairLock holder(client, name);
  holder.lock();
  own.pause();
  Child f(FAIRLOCK_CLI_PATH, cli({"run", "-w", "1", name, "true"}, own.url()), true);
  std::this_thread::sleep_for(300ms);  // longer than the watchdog's margin (150 ms)
  own.resume();
  const std::string out = f.rest();
  EXPECT_EQ(f.wait(), 75) << out;
  EXPECT_NE(out.find("no turn within --wait\n"), std::string::npos) << out;  // the library's answer
  EXPECT_EQ(zcard(own, name, "q"), 0);                                       // it left the queue
  holder.unlock();
}

// --sync-replicas against a master with no replica: WAIT 1 answers 0, no
// grant is ever acknowledged. Issue 44 (finding 2): `run -n --sync-replicas 1`
// exited 75 after 1.0 s saying "no turn within --wait (the server does not
// answer ...)" and left the grant held for its lease (10 s): -n's watchdog
// (1 s) cut the WAIT it carries (sync_timeout, 1 s) and the release after it.
TEST(CliRun, NonblockWhoseGrantIsNotAcknowledgedReleasesItAndExits69) {
  RedisServer alone;
  const std::string name = unique_name("cli-sync-n");
  CliResult r = run_cli({"run", "-n", "--sync-replicas", "1", name, "true"}, alone.url());
  EXPECT_EQ(r.status, 69) << r.output;
  EXPECT_NE(r.output.find(name + ": the grant was not acknowledged by 1 replica(s)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("it was released"), std::string::npos) << r.output;
  CliResult st = run_cli({"status", name}, alone.url());
  EXPECT_NE(st.output.find(" holders 0 "), std::string::npos) << st.output;
  Client client(opts_for(alone));
  FairLock next(client, name);
  ASSERT_TRUE(next.try_lock());  // free at once, not after the lease
  // Busy: the answer, after the WAIT the try carries too, not the watchdog's.
  CliResult busy = run_cli({"run", "-n", "--sync-replicas", "1", name, "true"}, alone.url());
  EXPECT_EQ(busy.status, 75) << busy.output;
  EXPECT_NE(busy.output.find("(-n: busy, or others wait)"), std::string::npos) << busy.output;
  next.unlock();
}

// Issue 44 (finding 5): the error was printed "fairlock: fairlock: NAME: ...".
TEST(CliRun, AGrantNotAcknowledgedByTheDeadlineIsToldOnceInTheCommandsWords) {
  RedisServer alone;
  const std::string name = unique_name("cli-sync-w");
  CliResult r = run_cli({"run", "-w", "1", "--sync-replicas", "1", name, "true"}, alone.url());
  EXPECT_EQ(r.status, 69) << r.output;
  EXPECT_EQ(r.output.rfind("fairlock: " + name + ": the grant was not acknowledged by 1 replica(s)", 0), 0u)
      << r.output;
  EXPECT_EQ(r.output.find("fairlock: fairlock:"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("(--sync-replicas); it was released"), std::string::npos) << r.output;
  EXPECT_TRUE(Client(opts_for(alone)).inspect(name).holders.empty());
}

TEST(CliRun, WaitIsABoundWithTheServerStopped) {
  std::vector<long long> overshoot;
  for (long run = env_or("FAIRLOCK_DEADLINE_RUNS", 1); run > 0; --run) wait_with_the_server_stopped(overshoot);
  std::cout << "[figures] fairlock run --wait 2s, server stopped mid-wait, " << overshoot.size() << " runs: overshoot "
            << p50_max(overshoot) << "\n";
}

}  // namespace
}  // namespace fairlock::test
