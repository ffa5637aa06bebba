// docs/PROTOCOL.md against the code: a client written in another language
// from that document alone must get the same record, commands, validity
// bounds and JSON as the C++ library and its command do. Each test reads the
// document from the source tree (doc_text.h) and compares what it states with
// what a real server and the `fairlock` command do.
#include <gtest/gtest.h>
#include <hiredis/hiredis.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "doc_text.h"
#include "fairlock/fairlock.h"
#include "fairlock_lua.h"
#include "redis_server.h"
#include "script_commands.h"
#include "test_cli_util.h"
#include "test_util.h"

namespace fairlock::test {
namespace {

// The text with every run of spaces and newlines made one space and the
// Markdown emphasis (`**`) taken out: a phrase reads the same wherever the
// document wraps it.
std::string flat(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '*' && i + 1 < text.size() && text[i + 1] == '*') {
      ++i;
      continue;
    }
    const bool space = c == ' ' || c == '\n';
    if (space && !out.empty() && out.back() == ' ') continue;
    out.push_back(space ? ' ' : c);
  }
  return out;
}

// The first group of every match of `re` in `text`, in order.
std::vector<std::string> firsts(const std::string& text, const std::regex& re) {
  std::vector<std::string> out;
  for (std::sregex_iterator it(text.begin(), text.end(), re), end; it != end; ++it) out.push_back((*it)[1]);
  return out;
}

// The code spans of a text, in order.
std::vector<std::string> code_spans(const std::string& text) { return firsts(text, std::regex("`([^`]+)`")); }

// The protocol version the document states (its "This is protocol version
// N", every record it shows, `HSET seq v N`, `(v N, s …)`, and the README's
// "versioned (version N)") is the one the scripts write into a name's
// record. Issue 44: three places said `v 7` while the server wrote 8.
TEST(Docs, TheProtocolVersionIsWhatTheServerWrites) {
  const std::string name = unique_name("docs-version");
  {
    Client client(opts_for(server()));
    FairLock lock(client, name);
    lock.lock();
    lock.unlock();
  }
  const std::string written = server().cmd({"HGET", key(name, "seq"), "v"});
  ASSERT_FALSE(written.empty());
  const std::string protocol = flat(source_file("docs/PROTOCOL.md"));
  const std::string readme = flat(source_file("README.md"));
  std::vector<std::pair<std::string, std::string>> stated;  // (number, the phrase that states it)
  const auto state = [&](const std::string& text, const std::string& phrase) {
    for (const auto& n : firsts(text, std::regex(phrase))) stated.emplace_back(n, phrase);
  };
  state(protocol, "This is protocol version ([0-9]+)");
  const std::size_t headline = stated.size();
  state(protocol, "under protocol version ([0-9]+)");
  state(protocol, "seq v ([0-9]+)");
  state(protocol, "\\(v ([0-9]+), s ");
  state(readme, "versioned \\(version ([0-9]+)\\)");
  ASSERT_EQ(headline, 1u) << "PROTOCOL.md no longer says \"This is protocol version N\"";
  ASSERT_GE(stated.size(), 6u) << "the phrases this test reads are gone from the documents";
  for (const auto& [number, where] : stated) {
    EXPECT_EQ(number, written) << "the document says " << number << " where it matches /" << where
                               << "/; the scripts write v " << written;
  }
}

// §4's shell recipe, run as the document gives it (from the source tree's
// root; its /tmp files in a directory of the test's own), writes the library
// the build embeds, byte for byte, and prints its name and each script
// text's SHA1: a client in another language that joins lua/ by §4's rule
// (lib.lua, upgrade.lua, then the operations) loads the same texts.
TEST(Docs, TheLibraryRecipeMakesTheEmbeddedBytes) {
  const std::string protocol = source_file("docs/PROTOCOL.md");
  const auto fence = protocol.find("\n  ```sh\n", protocol.find("- **The library** is"));
  ASSERT_NE(fence, std::string::npos);
  const auto begin = fence + 9, end = protocol.find("\n  ```\n", begin);
  ASSERT_NE(end, std::string::npos);
  char dir_template[] = "/tmp/fairlock-recipe-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  std::string recipe;
  std::istringstream lines(protocol.substr(begin, end + 1 - begin));
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("  ", 0) == 0) line.erase(0, 2);  // the list item's indentation
    for (auto at = line.find("/tmp/"); at != std::string::npos; at = line.find("/tmp/", at + dir.size())) {
      line.replace(at, 4, dir);
    }
    recipe += line + "\n";
  }
  Child sh("/bin/sh", {"-c", "cd '" + std::string(FAIRLOCK_SOURCE_DIR) + "' && " + recipe}, true);
  const std::string out = sh.rest();
  ASSERT_EQ(sh.wait(), 0) << recipe << out;
  std::ifstream library_file(dir + "/fairlock_lib.lua", std::ios::binary);
  std::ostringstream library;
  library << library_file.rdbuf();
  std::filesystem::remove_all(dir);
  EXPECT_TRUE(library.str() == detail::lua::library_source) << "the recipe's library differs from the build's";
  EXPECT_NE(out.find("library " + std::string(detail::lua::library_name) + "\n"), std::string::npos) << out;
  for (const auto& script : detail::lua::kScripts) {
    const std::string line = std::string(script.name) + " " + std::string(script.sha) + "\n";
    EXPECT_NE(out.find(line), std::string::npos) << line << out;
  }
}

// §4's list ("The scripts call `TIME`, … and nothing else") is exactly the
// commands the scripts call: a foreign client's ACL rule is made from it.
// Issue 44: it stopped at PUBLISH, while version 8 also sends SPUBLISH.
TEST(Docs, TheCommandListIsWhatTheScriptsCall) {
  const std::string protocol = flat(source_file("docs/PROTOCOL.md"));
  const std::string head = "Commands. The scripts call ";
  const auto from = protocol.find(head);
  ASSERT_NE(from, std::string::npos);
  const auto to = protocol.find("and nothing else", from);
  ASSERT_NE(to, std::string::npos);
  std::set<std::string> listed;
  for (std::string command : code_spans(protocol.substr(from, to - from))) {
    for (auto& ch : command) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    listed.insert(command);
  }
  const std::set<std::string> used = commands_the_scripts_call();
  for (const auto& c : used) EXPECT_TRUE(listed.count(c)) << "the scripts call " << c << "; §4 does not list it";
  for (const auto& c : listed) EXPECT_TRUE(used.count(c)) << "§4 lists " << c << "; no script calls it";
}

// What §4 says a user's ACL rule must allow (the keys, the channels of both
// publish modes, the script commands, FCALL and FUNCTION LOAD), with the
// prefix `fairlock`, is in docs/OPERATIONS.md's rule or one of its
// additions: the two documents give a foreign client the same rule.
TEST(Docs, TheProtocolsAclRuleIsInTheOperationsRules) {
  const std::string protocol = flat(source_file("docs/PROTOCOL.md"));
  const auto from = protocol.find("A user's ACL rule must allow");
  ASSERT_NE(from, std::string::npos);
  const auto keys = protocol.find("with the keys ", from), channels = protocol.find("the channels ", from);
  const auto end = protocol.find("plus `FCALL` and `FUNCTION LOAD`", from);
  ASSERT_TRUE(keys != std::string::npos && channels != std::string::npos && end != std::string::npos)
      << "§4's ACL sentence changed: update this test";
  const auto with_prefix = [](const std::string& pattern) {
    return "fairlock" + pattern.substr(1);
  };  // P: -> fairlock:
  std::vector<std::string> needed = {"~" + with_prefix(code_spans(protocol.substr(keys, channels - keys)).at(0)),
                                     "+fcall", "+function|load"};
  for (const auto& span : code_spans(protocol.substr(channels, end - channels))) {
    if (span.rfind("P:", 0) == 0) needed.push_back("&" + with_prefix(span));
  }
  for (const auto& c : commands_the_scripts_call()) needed.push_back("+" + c);
  const std::string operations = source_file("docs/OPERATIONS.md");
  std::set<std::string> documented;
  for (const auto& w : documented_acl_rule(operations)) documented.insert(w);
  for (const char* addition :
       {"- `Notify::keyspace` adds", "- Redis Cluster adds", "- Mode `s` on a standalone server adds"}) {
    for (const auto& w : words_of(code_after(operations, addition))) documented.insert(w);
  }
  EXPECT_GE(needed.size(), 26u);
  for (const auto& n : needed)
    EXPECT_TRUE(documented.count(n)) << "§4 requires " << n << "; OPERATIONS.md never gives it";
}

// Every local validity bound the document gives (a send time plus
// `remaining`, min(lease, liveness_ms) or `liveness_ms`) subtracts 1 ms.
// Issue 44: §6 gave a version 5 member's signalled grant "send time +
// liveness_ms", which a client followed to 0.2 ms past the server's deadline.
TEST(Docs, EveryValidityBoundSubtracts1ms) {
  const std::string protocol = flat(source_file("docs/PROTOCOL.md"));
  const std::regex bound(
      "send time(?: of (?:the|that) [^+]{0,80}?)? \\+ (`remaining`|min\\([^)]*\\)|`liveness_ms`)"
      "( − 1 ms)?");
  int found = 0;
  for (std::sregex_iterator it(protocol.begin(), protocol.end(), bound), end; it != end; ++it, ++found) {
    EXPECT_TRUE((*it)[2].matched) << "a validity bound without the 1 ms: \"" << it->str() << "\"";
  }
  EXPECT_GE(found, 8) << "the bounds this test reads are gone from the document";
}

// A reply to a pipeline of TIME, a script call and TIME, in µs.
struct Bracketed {
  long long before_us = 0, after_us = 0;
  std::string reply;  // the script's first integer
};

long long time_us(const redisReply& r) {
  return std::stoll(r.element[0]->str) * 1000000 + std::stoll(r.element[1]->str);
}

Bracketed bracketed_acquire(const std::string& name, const std::string& member, long liveness_ms) {
  const std::string sha = server().cmd({"SCRIPT", "LOAD", std::string(detail::lua::acquire_source)});
  redisContext* c = redisConnect("127.0.0.1", server().port());
  EXPECT_TRUE(c && !c->err);
  std::vector<std::string> call = {"EVALSHA", sha, "7"};
  for (const char* suffix : {"q", "w", "h", "g", "seq", "o", "ev"}) call.push_back(key(name, suffix));
  for (const std::string& a :
       {member, std::string("1"), std::string("60000"), std::to_string(liveness_ms), std::string("f")}) {
    call.push_back(a);
  }
  std::vector<const char*> argv;
  std::vector<std::size_t> lens;
  for (const auto& a : call) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  const char* time_argv[] = {"TIME"};
  // One write: the server runs the three back to back, so the script's now
  // lies between the two readings.
  redisAppendCommandArgv(c, 1, time_argv, nullptr);
  redisAppendCommandArgv(c, static_cast<int>(argv.size()), argv.data(), lens.data());
  redisAppendCommandArgv(c, 1, time_argv, nullptr);
  Bracketed b;
  void* replies[3] = {};
  for (auto& r : replies) EXPECT_EQ(redisGetReply(c, &r), REDIS_OK);
  b.before_us = time_us(*static_cast<redisReply*>(replies[0]));
  const auto* script = static_cast<redisReply*>(replies[1]);
  b.reply = script->type == REDIS_REPLY_ARRAY ? std::to_string(script->element[0]->integer) : "error";
  b.after_us = time_us(*static_cast<redisReply*>(replies[2]));
  for (auto* r : replies) freeReplyObject(r);
  redisFree(c);
  return b;
}

// The bound of §6 for a grant learned from a signal, on the server's own
// clock: "send time of the last call that saw the member waiting +
// min(lease, liveness_ms) − 1 ms" (and + liveness_ms − 1 ms for a member
// without a lease) is never after the deadline the server gave the grant,
// and without the 1 ms it is after it whenever that call ran in the
// millisecond it was sent in (the scripts floor their now). The send time is
// the server's TIME read just before the call in the same pipeline.
TEST(Docs, ASignalledGrantIsValidUntilSendTimePlusWindowMinus1ms) {
  constexpr long kLiveness = 10000;  // below the members' lease (60000): min(lease, liveness) = liveness
  int same_ms = 0;
  for (const std::string lease : {":60000", ""}) {  // a version 6 member, and a version 5 one (no lease)
    int tries = 0;
    for (int found = 0; found < 3 && tries < 100; ++tries) {
      const std::string name = unique_name("docs-signal");
      const std::string holder = "n00000000000000a1:0123456789abcdef01234567:60000";
      const std::string waiter = "p00000000000000b2:0123456789abcdef01234567" + lease;
      ASSERT_EQ(bracketed_acquire(name, holder, kLiveness).reply, "1");
      const Bracketed w = bracketed_acquire(name, waiter, kLiveness);
      ASSERT_EQ(w.reply, "0") << "the waiter was not queued";
      const std::string sha = server().cmd({"SCRIPT", "LOAD", std::string(detail::lua::release_source)});
      std::vector<std::string> release = {"EVALSHA", sha, "7"};
      for (const char* suffix : {"q", "w", "h", "g", "seq", "o", "ev"}) release.push_back(key(name, suffix));
      release.insert(release.end(), {holder, "1"});
      ASSERT_EQ(server().cmd(release), "1");  // hands the permit to the waiter: a handoff, signalled
      const long long deadline_us = std::stoll(server().cmd({"ZSCORE", key(name, "h"), waiter})) * 1000;
      const long long valid_until_us = w.before_us + kLiveness * 1000 - 1000;  // the documented bound
      EXPECT_LE(valid_until_us, deadline_us) << "the documented bound trusts the grant past the server's deadline";
      if (w.before_us / 1000 == w.after_us / 1000 && w.before_us % 1000 != 0) {
        ++found;
        ++same_ms;
        EXPECT_GT(valid_until_us + 1000, deadline_us) << "without the 1 ms the bound would still hold: not needed";
      }
      server().cmd({"DEL", key(name, "h"), key(name, "g"), key(name, "q"), key(name, "w")});
    }
    EXPECT_LT(tries, 100) << "no call ran in the millisecond of its send time";
  }
  std::cout << "[figures] signalled grants checked in the millisecond of their send time: " << same_ms << std::endl;
}

// The JSON keys of a text, in order ("key": or "key" :).
std::vector<std::string> json_keys(const std::string& json) { return firsts(json, std::regex("\"([a-z_]+)\"\\s*:")); }

// The example of `fairlock status --json` in PROTOCOL.md has the keys, in
// their order, that the command prints for a name with a holder and a
// waiter. Issue 44: the layout was given by field names only.
TEST(Docs, TheStatusJsonHasTheDocumentedKeys) {
  const std::string protocol = source_file("docs/PROTOCOL.md");
  const auto section = protocol.find("fairlock status --json");
  ASSERT_NE(section, std::string::npos);
  const auto open = protocol.find("```json\n", section);
  ASSERT_NE(open, std::string::npos) << "no ```json example after the JSON section's title";
  const auto close = protocol.find("```", open + 7);
  const std::vector<std::string> documented = json_keys(protocol.substr(open, close - open));

  const std::string name = unique_name("docs-json");
  Client client(opts_for(server()));
  FairLock holder(client, name), waiter(client, name);
  holder.lock();
  std::thread t([&] { waiter.lock(); });
  // (no ASSERT before the join: the waiting thread must be joined)
  EXPECT_TRUE(eventually([&] { return zcard(server(), name, "q") == 1; })) << "the waiter never queued";
  const CliResult r = run_cli({"status", "--json", name});
  holder.unlock();
  t.join();
  waiter.unlock();
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(json_keys(r.output), documented) << "the command printed " << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << "not one line: " << r.output;
  EXPECT_EQ(r.output.find(' '), std::string::npos) << "spaces between tokens: " << r.output;
}

}  // namespace
}  // namespace fairlock::test
