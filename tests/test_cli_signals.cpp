// Signals and `fairlock run`: a signal meant for the command reaches it once,
// however it was sent; the command does not outlive a SIGKILLed fairlock.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <termios.h>

#include "test_cli_util.h"

namespace fairlock::test {
namespace {

using namespace std::chrono_literals;

// A command that logs each TERM, INT, QUIT and USR1 it gets to `log` as
// "TERM <sender's pid>" (0: the kernel, e.g. a terminal's Ctrl-C), handling
// each as it comes (perl: required by the build); with `read_line`, logs
// "got <line>" read from stdin; says "ready PPID" (fairlock's pid) and runs
// until `stop` exists.
std::vector<std::string> counting_command(const TempFile& log, const std::string& stop, bool read_line = false) {
  const std::string script = R"(use POSIX; $| = 1; my ($log, $stop, $read) = @ARGV;
sub note { open(my $f, '>>', $log) or die; print $f "@_\n"; close $f; }
for my $s (qw(TERM INT QUIT USR1)) {
  sigaction(POSIX->can("SIG$s")->(), POSIX::SigAction->new(sub { note($_[0], $_[1]{pid} // 0) },
            POSIX::SigSet->new, SA_SIGINFO));
}
print "ready ", getppid(), "\n";
if ($read) { my $l = <STDIN>; chomp $l; note("got $l"); }
select(undef, undef, undef, 0.02) until -e $stop;)";
  return {"perl", "-e", script, log.path, stop, read_line ? "1" : ""};
}

// Sends USR1 to `pid` and waits until the command logged it: every signal
// sent before has been handled by then.
void barrier(pid_t pid, const TempFile& log) {
  ::kill(pid, SIGUSR1);
  ASSERT_TRUE(eventually([&] { return log.count("USR1 ") == 1; })) << log.text();
}

struct Counted {
  TempFile log;
  std::string stop = log.path + ".stop";
  Counted() = default;
  Counted(const Counted&) = delete;
  Counted& operator=(const Counted&) = delete;
  ~Counted() { std::remove(stop.c_str()); }
  void finish() { std::ofstream(stop.c_str()) << "\n"; }
};

std::vector<std::string> run_counting(const Counted& c, const std::string& name) {
  std::vector<std::string> args = cli({"run", name, "--"});
  for (auto& a : counting_command(c.log, c.stop)) args.push_back(a);
  return args;
}

TEST(CliSignals, TimeoutsTermReachesTheCommandOnce) {
  Counted c;
  // timeout(1) signals its child, then its own process group, which holds
  // fairlock but not the command: two signals for fairlock, one forwarded.
  std::vector<std::string> args{"-s", "TERM", "120", FAIRLOCK_CLI_PATH};
  for (auto& a : run_counting(c, unique_name("cli-timeout-term"))) args.push_back(a);
  Child t("/usr/bin/timeout", args);
  const std::string ready = t.line();
  ASSERT_EQ(ready.rfind("ready ", 0), 0u) << ready;
  const std::string fairlock = ready.substr(6);
  t.kill(SIGTERM);  // as at its deadline: timeout sends the signal on, twice
  ASSERT_TRUE(eventually([&] { return c.log.count("TERM ") >= 1; }));
  barrier(std::stoi(fairlock), c.log);
  c.finish();
  t.wait();
  EXPECT_EQ(c.log.count("TERM "), 1) << c.log.text();
  EXPECT_EQ(c.log.text().find("TERM " + fairlock + "\n"), 0u) << "forwarded by fairlock only: " << c.log.text();
}

TEST(CliSignals, SignalsToFairlocksPidOrGroupReachTheCommandOnce) {
  for (bool group : {false, true}) {
    Counted c;
    std::vector<std::string> args = run_counting(c, unique_name("cli-kill"));
    args.insert(args.begin(), FAIRLOCK_CLI_PATH);
    Child f("/usr/bin/setsid", args);  // fairlock leads a group of its own (setsid execs, no fork)
    const std::string ready = f.line();
    ASSERT_EQ(ready.rfind("ready ", 0), 0u) << ready;
    const pid_t fairlock = std::stoi(ready.substr(6));
    ASSERT_EQ(::getpgid(fairlock), fairlock);
    ::kill(group ? -fairlock : fairlock, SIGTERM);
    ::kill(group ? -fairlock : fairlock, SIGINT);
    ASSERT_TRUE(eventually([&] { return c.log.count("TERM ") >= 1 && c.log.count("INT ") >= 1; })) << c.log.text();
    barrier(fairlock, c.log);
    c.finish();
    EXPECT_EQ(f.wait(), 0);
    const std::string from = " " + std::to_string(fairlock);
    EXPECT_EQ(c.log.count("TERM "), 1) << (group ? "group: " : "pid: ") << c.log.text();
    EXPECT_EQ(c.log.count("INT "), 1) << (group ? "group: " : "pid: ") << c.log.text();
    EXPECT_EQ(c.log.count("TERM" + from), 1) << "forwarded by fairlock only: " << c.log.text();
    EXPECT_EQ(c.log.count("INT" + from), 1) << "forwarded by fairlock only: " << c.log.text();
  }
}

// Whether process `pid` has ended (gone, or a zombie not yet reaped).
bool ended(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return true;
  const auto paren = line.rfind(')');
  return paren == std::string::npos || line.compare(paren + 2, 1, "Z") == 0;
}

TEST(CliSignals, ASigkilledFairlocksCommandIsKilledAtOnce) {
  const std::string name = unique_name("cli-pdeath");
  Child f(FAIRLOCK_CLI_PATH, cli({"run", name, "--", "sh", "-c", "echo $$; exec sleep 600"}));
  const std::string line = f.line();
  ASSERT_FALSE(line.empty());
  const pid_t command = std::stoi(line);
  ASSERT_FALSE(ended(command));
  f.kill(SIGKILL);
  f.wait();
  EXPECT_TRUE(eventually([&] { return ended(command); }, 10s)) << "the command outlived fairlock";
  Client client(opts_for(server()));
  EXPECT_EQ(client.evict(name, client.inspect(name).holders.at(0).token), Evicted::holder);  // (its lease: 10 s)
}

// fairlock on a terminal of its own (a pty, fairlock the session leader).
class OnATerminal {
 public:
  // `args` for fairlock, its stdin, stdout and stderr the terminal (stdin
  // /dev/null with `stdin_null`: the terminal stays the controlling one).
  explicit OnATerminal(const std::vector<std::string>& args, bool stdin_null = false)
      : master_(::posix_openpt(O_RDWR | O_NOCTTY)) {
    if (master_ < 0 || ::grantpt(master_) != 0 || ::unlockpt(master_) != 0) throw std::runtime_error("pty");
    const std::string slave = ::ptsname(master_);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setsid();
      const int fd = ::open(slave.c_str(), O_RDWR);  // becomes the controlling terminal
      for (int i = 0; i < 3; ++i) ::dup2(fd, i);
      if (stdin_null) ::dup2(::open("/dev/null", O_RDONLY), 0);
      exec_or_exit(FAIRLOCK_CLI_PATH, args);
    }
    reader_ = LineReader(master_);
  }
  OnATerminal(const OnATerminal&) = delete;
  OnATerminal& operator=(const OnATerminal&) = delete;
  ~OnATerminal() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    ::close(master_);
  }
  // Waits for a line that starts with `prefix`.
  bool expect(const std::string& prefix) {
    for (;;) {
      auto l = reader_.line(20s);
      if (!l) return false;
      if (l->rfind(prefix, 0) == 0) return true;
    }
  }
  void type(const std::string& keys) { ASSERT_EQ(::write(master_, keys.data(), keys.size()), (ssize_t)keys.size()); }
  int wait() {
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = 0;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

 private:
  int master_ = -1;
  pid_t pid_ = 0;
  LineReader reader_;
};

TEST(CliSignals, OnATerminalCtrlCReachesTheCommandOnceAndItReadsTheTerminal) {
  Counted c;
  std::vector<std::string> args = cli({"run", unique_name("cli-tty"), "--"});
  for (auto& a : counting_command(c.log, c.stop, true)) args.push_back(a);
  OnATerminal term(args);
  ASSERT_TRUE(term.expect("ready"));
  term.type("hello\n");  // read from the terminal: only the foreground group may
  ASSERT_TRUE(eventually([&] { return c.log.count("got hello") == 1; })) << c.log.text();
  term.type("\x03");  // Ctrl-C
  ASSERT_TRUE(eventually([&] { return c.log.count("INT ") >= 1; })) << c.log.text();
  term.type("\x1c");  // Ctrl-\, after it: every INT has arrived by the time QUIT is logged
  ASSERT_TRUE(eventually([&] { return c.log.count("QUIT ") == 1; })) << c.log.text();
  c.finish();
  EXPECT_EQ(term.wait(), 0);
  EXPECT_EQ(c.log.count("INT "), 1) << c.log.text();
  EXPECT_EQ(c.log.count("INT 0"), 1) << "from the terminal, not forwarded: " << c.log.text();
}

// stdin redirected, fairlock still in the terminal's foreground: the command
// gets the terminal (it was stopped by SIGTTIN in a group of its own, and
// fairlock held the lock for ever).
TEST(CliSignals, WithStdinRedirectedTheCommandStillReadsTheTerminal) {
  OnATerminal term(
      cli({"run", unique_name("cli-tty-null"), "--", "sh", "-c", "echo ready; read x </dev/tty; echo \"got $x\""}),
      true);
  ASSERT_TRUE(term.expect("ready"));
  term.type("hello\n");
  ASSERT_TRUE(term.expect("got hello"));  // (stopped: the destructor kills it)
  EXPECT_EQ(term.wait(), 0);
}

TEST(CliSignals, OnATerminalRunShowsItsPlaceInLine) {
  Client client(opts_for(server()));
  const std::string name = unique_name("cli-tty-progress");
  FairLock holder(client, name);
  holder.lock();
  OnATerminal term(cli({"run", name, "true"}));  // stderr a terminal: progress without -v
  EXPECT_TRUE(term.expect("fairlock: " + name + ": waiting, #0 in line (#0 is next)"));
  holder.unlock();
  EXPECT_EQ(term.wait(), 0);
}

}  // namespace
}  // namespace fairlock::test
