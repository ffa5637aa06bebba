#pragma once
// Test-side helpers shared by the fault and soak tests: spawning workers,
// loading and checking their history, inspecting a name's queue in Redis.
#include <fairlock/fairlock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "env.h"
#include "fairlock_lua.h"
#include "history.h"
#include "redis_server.h"
#include "server_log.h"
#include "support.h"

namespace fairlock::faults {

using namespace std::chrono_literals;

inline std::string qkey(const std::string& name, const std::string& suffix, const std::string& prefix = "fairlock") {
  return prefix + ":{" + name + "}:" + suffix;
}

// One entry of a name's queue structures.
struct Entry {
  std::string name, suffix, member;
  double score = 0;
};

// The q/w/h entries of `names` whose member belongs to client id `cid`
// (all entries if `cid` is empty), and their uncontended holders: suffix "o",
// the member from o's value, the score its absolute expiry in ms (PEXPIRETIME).
inline std::vector<Entry> entries_of(test::RedisServer& s, const std::vector<std::string>& names,
                                     const std::string& cid) {
  std::vector<Entry> out;
  auto mine = [&cid](const std::string& member) { return cid.empty() || member.find(cid) == 1; };
  for (const auto& n : names) {
    for (const char* suffix : {"q", "w", "h"}) {
      auto items = split(s.cmd({"ZRANGE", qkey(n, suffix), "0", "-1", "WITHSCORES"}), '\n');
      for (size_t i = 0; i + 1 < items.size(); i += 2) {
        if (mine(items[i])) out.push_back({n, suffix, items[i], std::strtod(items[i + 1].c_str(), nullptr)});
      }
    }
    const std::string value = s.cmd({"GET", qkey(n, "o")});  // "(nil)" if none, "ERR:..." if no string
    if (value == "(nil)" || value.rfind("ERR:", 0) == 0) continue;
    const std::string member = value.substr(0, value.find(' '));
    if (member.empty() || !mine(member)) continue;
    const long long expires = std::atoll(s.cmd({"PEXPIRETIME", qkey(n, "o")}).c_str());
    if (expires == -2) continue;  // expired since the GET
    // Without an expiry (-1) the grant never ends: no bound admits it.
    out.push_back({n, "o", member, expires == -1 ? HUGE_VAL : static_cast<double>(expires)});
  }
  return out;
}

// Every key under the prefix, sorted.
inline std::vector<std::string> all_keys(test::RedisServer& s, const std::string& prefix = "fairlock") {
  std::string all = s.cmd({"KEYS", prefix + ":*"});
  std::vector<std::string> out;
  if (!all.empty()) out = split(all, '\n');
  std::sort(out.begin(), out.end());
  return out;
}

// Keys that an idle deployment may keep: the fence counters, keyspace wake
// keys (documented to live at most 60 s), and the registrations of killed
// clients (docs/PROTOCOL.md "Who": they expire 3 liveness_ttl after the last
// refresh, at most 90 s with the suites' liveness of at most 30 s).
inline std::vector<std::string> leaked_keys(test::RedisServer& s, const std::string& prefix = "fairlock") {
  std::vector<std::string> out;
  for (const auto& k : all_keys(s, prefix)) {
    if (k.size() > 5 && k.compare(k.size() - 5, 5, "}:seq") == 0) continue;
    if (k.find("}:wake:") != std::string::npos) {
      long long pttl = std::atoll(s.cmd({"PTTL", k}).c_str());
      if (pttl > 0 && pttl <= 60000) continue;
    }
    if (k.rfind(prefix + ":client:{", 0) == 0) {
      long long pttl = std::atoll(s.cmd({"PTTL", k}).c_str());
      if (pttl > 0 && pttl <= 90000) continue;
    }
    out.push_back(k);
  }
  return out;
}

// Polls a test-side condition for at most `limit`; true once it holds.
inline bool eventually(const std::function<bool()>& pred, std::chrono::milliseconds limit = 30000ms) {
  auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(5ms);
  }
  return pred();
}

inline long long zcard(test::RedisServer& s, const std::string& name, const char* which) {
  return std::atoll(s.cmd({"ZCARD", qkey(name, which)}).c_str());
}

// The deadlines a dead process left behind must not outlive it by more than
// its liveness (waiters) or lease (holders); `slack_ms` covers a heartbeat
// that was already on its way when the process died.
inline void expect_bounded_entries(test::RedisServer& s, const std::vector<std::string>& names, const std::string& cid,
                                   Micros killed_at, long lease_ms, long liveness_ms, long slack_ms = 1000) {
  const auto killed_ms = killed_at / 1000;  // whole ms, floored on purpose
  const auto kill_ms = static_cast<double>(killed_ms);
  for (const auto& e : entries_of(s, names, cid)) {
    if (e.suffix == "q") continue;  // a ticket, not a deadline
    const long bound = e.suffix == "w" ? liveness_ms : std::max(lease_ms, liveness_ms);
    EXPECT_LE(e.score, kill_ms + static_cast<double>(bound + slack_ms))
        << e.name << ":" << e.suffix << " entry " << e.member << " of a process killed at " << kill_ms
        << " ms lives until " << std::fixed << e.score << " ms";
  }
}

// Runs one protocol call on each name (a try_lock that is released at once),
// so that entries past their deadline get pruned.
inline void touch_names(test::RedisServer& s, const std::vector<std::pair<std::string, std::uint32_t>>& names) {
  Options o;
  o.url = s.url();
  o.notify = Notify::poll;
  Client c(o);
  for (const auto& [name, permits] : names) {
    FairSemaphore sem(c, name, permits);
    if (sem.try_lock()) sem.unlock();
  }
}

// Kills connections by CLIENT KILL ID: command connections (normal clients
// other than the MONITOR and ourselves) or subscribers (TYPE pubsub).
inline int kill_connections(test::RedisServer& s, bool subscribers) {
  if (subscribers) return std::atoi(s.cmd({"CLIENT", "KILL", "TYPE", "pubsub"}).c_str());
  int n = 0;
  for (const auto& line : split(s.cmd({"CLIENT", "LIST", "TYPE", "normal"}), '\n')) {
    std::string id, flags, cmd;
    for (const auto& kv : split(line)) {
      if (kv.rfind("id=", 0) == 0) id = kv.substr(3);
      if (kv.rfind("flags=", 0) == 0) flags = kv.substr(6);
      if (kv.rfind("cmd=", 0) == 0) cmd = kv.substr(4);
    }
    if (id.empty() || flags.find('O') != std::string::npos || cmd == "client|list" || cmd == "monitor") continue;
    if (s.cmd({"CLIENT", "KILL", "ID", id}) == "1") ++n;
  }
  return n;
}

// A participant of another (fake) process that speaks the protocol with raw
// EVALSHA calls, each on a fresh connection (so it is immune to whatever
// happens to the library's pool). Loads the scripts when needed.
class RawParticipant {
 public:
  RawParticipant(test::RedisServer& s, std::string name,
                 std::string member = "n00000000000000aa:0123456789abcdef0123456789abcdef")
      : s_(s), name_(std::move(name)), member_(std::move(member)) {}
  const std::string& member() const { return member_; }
  // The acquire reply as text ("1\n<fence>" when granted).
  std::string acquire(long lease_ms, long liveness_ms, std::uint32_t permits = 1, const char* mode = "q") {
    return call(script(detail::lua::acquire_source),
                {member_, std::to_string(permits), std::to_string(lease_ms), std::to_string(liveness_ms), mode});
  }
  std::string release(std::uint32_t permits = 1) {
    return call(script(detail::lua::release_source), {member_, std::to_string(permits)});
  }
  // MULTI; <before...>; release; EXEC, in one transaction. The EXEC reply as text.
  std::string release_in_multi_after(const std::vector<std::string>& before) {
    std::string sha = script(detail::lua::release_source);
    std::vector<std::vector<std::string>> cmds = {{"MULTI"}, before, evalsha(sha, {member_, "1"}), {"EXEC"}};
    return pipeline(cmds).back();
  }

 private:
  std::vector<std::string> evalsha(const std::string& sha, const std::vector<std::string>& args) {
    std::vector<std::string> v = {"EVALSHA", sha, "7"};
    for (const char* suffix : {"q", "w", "h", "g", "seq", "o", "ev"}) v.push_back(qkey(name_, suffix));
    v.insert(v.end(), args.begin(), args.end());
    return v;
  }
  std::string script(std::string_view source) {
    std::string sha = s_.cmd({"SCRIPT", "LOAD", std::string(source)});
    return sha;
  }
  std::string call(const std::string& sha, const std::vector<std::string>& args) { return s_.cmd(evalsha(sha, args)); }
  std::vector<std::string> pipeline(const std::vector<std::vector<std::string>>& cmds) {
    Rec c(s_.port());
    std::vector<std::string> out;
    for (const auto& cmd : cmds) out.push_back(c.cmd(cmd));
    return out;
  }
  test::RedisServer& s_;
  std::string name_, member_;
};

class Scenario {
 public:
  Scenario(test::RedisServer& server, const std::string& base)
      : server_(&server), url_(server.url()), ev_(ev_key(base)), rec_(recorder().port()) {}
  // Workers reach the lock server by `url` (a Sentinel set's, say): no one
  // server to log or inspect (server(), start_log(), roles() need one).
  Scenario(std::string url, const std::string& base)
      : url_(std::move(url)), ev_(ev_key(base)), rec_(recorder().port()) {}

  test::RedisServer& server() { return *server_; }
  const std::string& ev() const { return ev_; }
  Rec& rec() { return rec_; }
  Micros now() { return rec_.time_us(); }

  void start_log() { log_ = std::make_unique<ServerLog>(server_->port()); }
  ServerLog* log() { return log_.get(); }

  std::vector<std::string> args(const std::string& wid, const std::vector<std::string>& extra) {
    std::vector<std::string> a = {"url=" + url_, "rec=" + std::to_string(recorder().port()), "ev=" + ev_, "wid=" + wid};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }

  Proc& spawn(const std::string& wid, const std::vector<std::string>& extra) {
    auto p = std::make_unique<Proc>(worker_path(), args(wid, extra));
    Proc& ref = *p;
    procs_[wid] = std::move(p);
    return ref;
  }
  // A stdin-driven worker, ready (its client id known).
  Proc& spawn_cmd(const std::string& wid, const std::vector<std::string>& extra, std::string* cid = nullptr) {
    std::vector<std::string> a = extra;
    a.emplace_back("mode=cmd");
    Proc& p = spawn(wid, a);
    auto ready = p.expect("ready ", 30s);
    EXPECT_TRUE(ready.has_value()) << wid << " did not start";
    if (ready && cid) *cid = split(*ready)[1];
    return p;
  }
  Proc& proc(const std::string& wid) { return *procs_.at(wid); }
  // Client id -> worker id, from the workers' S records.
  std::map<std::string, std::string> wid_by_cid() {
    std::map<std::string, std::string> out;
    for (const auto& line : rec_.lrange(ev_)) {
      auto f = split(line);
      if (f.size() >= 4 && f[0] == "S") out[f[3]] = f[1];
    }
    return out;
  }
  std::map<std::string, std::unique_ptr<Proc>>& procs() { return procs_; }

  // Who holds and who waits in `names` right now, according to Redis, and
  // every running worker (worker ids).
  struct Roles {
    std::vector<std::string> holders, waiters, alive;
  };
  Roles roles(const std::vector<std::string>& names) {
    Roles r;
    auto by_cid = wid_by_cid();
    for (auto& e : entries_of(*server_, names, "")) {
      if (e.suffix == "w") continue;
      auto it = by_cid.find(e.member.substr(1, e.member.find(':') - 1));
      if (it == by_cid.end() || !proc(it->second).running()) continue;
      (e.suffix == "q" ? r.waiters : r.holders).push_back(it->second);  // h or o
    }
    for (auto& [wid, p] : procs_) {
      if (p->running()) r.alive.push_back(wid);
    }
    return r;
  }

  // SIGSTOPs a worker; cont() lets it go on. The pause goes into the history
  // (P wid from to, CLOCK_MONOTONIC read before the stop and after the
  // resume), where it may explain a belief overlap (history.h).
  void stop(const std::string& wid) {
    if (stopped_.count(wid) || !proc(wid).running()) return;
    stopped_[wid] = mono_us();
    proc(wid).kill(SIGSTOP);
  }
  void cont(const std::string& wid) {
    auto it = stopped_.find(wid);
    if (it == stopped_.end()) return;
    proc(wid).kill(SIGCONT);
    rec_.rpush(ev_, "P " + wid + " " + std::to_string(it->second) + " " + std::to_string(mono_us()));
    stopped_.erase(it);
  }
  bool stopped(const std::string& wid) const { return stopped_.count(wid) > 0; }

  // SIGKILLs a worker (stopped or not) and reaps it; returns the recorder
  // time after the kill.
  Micros kill(const std::string& wid) {
    Proc& p = proc(wid);
    p.kill(SIGKILL);
    p.wait_for(10s);
    if (auto it = stopped_.find(wid); it != stopped_.end()) {
      rec_.rpush(ev_, "P " + wid + " " + std::to_string(it->second) + " " + std::to_string(mono_us()));
      stopped_.erase(it);
    }
    killed_.insert(wid);
    ++kills_;
    return now();
  }
  const std::set<std::string>& killed() const { return killed_; }
  int kills() const { return kills_; }

  // Waits (bounded) for every live worker to exit; each must exit with 0.
  void wait_all(std::chrono::seconds limit) {
    auto end = std::chrono::steady_clock::now() + limit;
    for (auto& [wid, p] : procs_) {
      if (!p->running()) continue;
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
      auto rc = p->wait_for(std::max(left, 1ms));
      if (!rc) {
        ADD_FAILURE() << "worker " << wid << " did not finish within " << limit.count() << " s (hung)";
        p->kill(SIGKILL);
        p->wait_for(10s);
        killed_.insert(wid);
      } else {
        EXPECT_EQ(*rc, 0) << "worker " << wid << " exited with " << *rc;
      }
    }
  }

  // Stops the server log, loads the history and runs the checker; every
  // violation is a test failure. Prints the figures.
  CheckResult check(CheckConfig cfg = CheckConfig(), const std::string& label = "") {
    if (log_) {
      EXPECT_TRUE(log_->stop()) << "the MONITOR log did not catch up with the server";
      for (const auto& v : log_->violations()) ADD_FAILURE() << "server-side: " << v;
      // A log that recognised no grant checked nothing (say, scripts that are
      // not the ones the log knows): that must not pass as clean.
      EXPECT_GT(log_->grants().size(), 0u)
          << "the server log recognised no grant in " << log_->scripts() << " script runs";
      cfg.log = log_.get();
    }
    for (const auto& k : killed_) cfg.killed.insert(k);
    history_ = History::load(rec_, ev_);
    CheckResult r = faults::check(history_, cfg);
    for (const auto& v : r.violations) ADD_FAILURE() << "history: " << v;
    for (auto& [wid, w] : history_.workers) {
      if (!killed_.count(wid) && w.t_done < 0) ADD_FAILURE() << "worker " << wid << " never finished cleanly";
    }
    std::cout << "[figures] "
              << (label.empty() ? ::testing::UnitTest::GetInstance()->current_test_info()->name() : label) << ": "
              << r.summary();
    if (log_) {
      std::cout << "; server log: " << log_->scripts() << " script runs, " << log_->grants().size() << " grants, "
                << log_->lines() << " lines, " << log_->losses().size() << " data losses, " << log_->resyncs()
                << " syncs";
    }
    std::cout << "; faults injected: " << faults_ << std::endl;
    return r;
  }
  History& history() { return history_; }
  void fault(int n = 1) { faults_ += n; }
  int faults() const { return faults_; }

 private:
  test::RedisServer* server_ = nullptr;
  std::string url_;
  std::string ev_;
  Rec rec_;
  std::unique_ptr<ServerLog> log_;
  std::map<std::string, std::unique_ptr<Proc>> procs_;
  std::set<std::string> killed_;
  std::map<std::string, Micros> stopped_;  // wid -> CLOCK_MONOTONIC before its SIGSTOP
  int kills_ = 0, faults_ = 0;
  History history_;
};

}  // namespace fairlock::faults
