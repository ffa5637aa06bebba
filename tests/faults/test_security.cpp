// Security: AUTH with a password, an ACL user limited to the key prefix, the
// wake channels and exactly the commands the library and its scripts need
// (the minimal rule is tested to be enough, and each of its permissions to
// be needed; on a Redis Cluster, the rule with the cluster additions, set on
// every node, and those of the additions that are cheap to drop); a client
// without the right permissions gets a clear error; tokens are unguessable.
#include <fairlock/fairlock.h>
#include <gtest/gtest.h>
#include <hiredis/hiredis.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <bitset>
#include <mutex>
#include <set>

#include "doc_text.h"
#include "fairlock_lua.h"
#include "redis_cluster.h"
#include "scenario.h"
#include "script_commands.h"

namespace fairlock::faults {
namespace {

// The rules are read from docs/OPERATIONS.md (doc_text.h), never copied:
// what the tests apply to a real server is what a user reads. A rule the
// document no longer gives reads as one word naming what is missing, which
// ACL SETUSER refuses: every test that uses it fails on it (set_user), and
// the others still run.
std::vector<std::string> documented(const std::function<std::vector<std::string>(const std::string&)>& read) {
  try {
    return read(test::source_file("docs/OPERATIONS.md"));
  } catch (const std::exception& e) {
    return {std::string("(docs/OPERATIONS.md: ") + e.what() + ")"};
  }
}
// The words of the `code` after `marker` in docs/OPERATIONS.md.
std::vector<std::string> documented_addition(const std::string& marker) {
  return documented([&](const std::string& text) { return test::words_of(test::code_after(text, marker)); });
}
// The minimal ACL rule for the default (publish) mode, every feature included
// (lock, semaphore, try, timeouts, cancel, renewal, reloading the scripts
// after a flush, inspect, list, evict): the client's own commands
// (+fcall +function|load +subscribe +scan) and the scripts'.
const std::vector<std::string> kMinimalRule = documented(test::documented_acl_rule);
// The same rule for a client that runs the scripts by EVALSHA (a server
// without functions, or Options::use_functions false).
std::vector<std::string> evalsha_rule() {
  std::vector<std::string> rule;
  for (const auto& r : kMinimalRule) {
    rule.push_back(r == "+fcall" ? "+evalsha" : r == "+function|load" ? "+script|load" : r);
  }
  return rule;
}
// Added for Notify::keyspace.
const std::vector<std::string> kKeyspaceExtra = documented_addition("- `Notify::keyspace` adds");
// Added on Redis Cluster (sharded wake, protocol version 8: mode 's'; the
// slot map and the redirections).
const std::vector<std::string> kShardedExtra = documented_addition("- Redis Cluster adds");
// Added for names shared with a member of mode 's' on a standalone server.
const std::vector<std::string> kStandaloneShardedExtra = documented_addition("- Mode `s` on a standalone server adds");
// Added for Options::sync_replicas (any topology).
const std::vector<std::string> kSyncExtra = documented_addition("- `Options::sync_replicas` adds");

std::vector<std::string> plus(std::vector<std::string> rule, const std::vector<std::string>& extra) {
  rule.insert(rule.end(), extra.begin(), extra.end());
  return rule;
}

void set_user(test::RedisServer& s, const std::string& user, const std::string& password,
              const std::vector<std::string>& rule) {
  std::vector<std::string> argv = {"ACL", "SETUSER", user, "reset", "on", ">" + password};
  argv.insert(argv.end(), rule.begin(), rule.end());
  std::string words;
  for (const auto& r : rule) words += " " + r;
  ASSERT_EQ(s.cmd(argv), "OK") << "the rule:" << words;
}

// Where a workload runs: one server, or a cluster's nodes (the masters
// first); `holder` is the server that holds a name's keys.
struct Deployment {
  std::string scheme;  // "redis" or "redis-cluster"
  std::string hosts;   // "127.0.0.1:port[,127.0.0.1:port...]"
  std::vector<test::RedisServer*> masters;
  std::function<test::RedisServer&(const std::string& name)> holder;
  bool sharded = false;  // grants signalled on shard channels (a cluster)
};

Deployment standalone(test::RedisServer& s) {
  return {"redis", "127.0.0.1:" + std::to_string(s.port()), {&s}, [&s](const std::string&) -> test::RedisServer& {
            return s;
          }};
}

Deployment on_cluster(test::RedisCluster& cluster, int masters) {
  Deployment d{"redis-cluster", cluster.seeds(), {}, {}, true};
  for (int m = 0; m < masters; ++m) d.masters.push_back(&cluster.node(m));
  d.holder = [&cluster](const std::string& name) -> test::RedisServer& {
    return cluster.node(cluster.master_of_slot(cluster.slot_of(qkey(name, "q"))));
  };
  return d;
}

// How a workload runs.
struct WorkloadRun {
  Notify mode = Notify::publish;
  std::string name;  // the main name; empty: a fresh one
  int sync_replicas = 0;
};

struct Workload {
  std::vector<std::string> errors;  // "step: what()"
  bool subscribed = false;          // the server shows the client's wake subscription
  std::string log;                  // what the client logged (warnings and errors)
};

// The client's warnings, where release() explains a failed release.
bool is_permission_error(const std::string& e) {
  return e.find("NOPERM") != std::string::npos || e.find("can't run this command") != std::string::npos ||
         e.find("no permissions") != std::string::npos || e.find("can't access") != std::string::npos ||
         e.find("can't publish") != std::string::npos;
}

// The log without the notices that the scripts run by EVALSHA and that the
// eviction policy could not be checked (they quote the NOPERM that caused
// them: the minimal rule allows neither INFO nor CONFIG; no failure).
std::string permission_errors(const std::string& log) {
  std::string out;
  for (const auto& line : split(log, '\n')) {
    if (line.find("running the scripts by EVALSHA") == std::string::npos &&
        line.find("could not check the maxmemory-policy") == std::string::npos) {
      out += line + "\n";
    }
  }
  return out;
}

// A sink whose text is read under the lock its writes take: the heartbeat
// thread may log while a test step reads.
class TextSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  std::string text() {
    std::lock_guard<std::mutex> lk(mutex_);
    return text_;
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t line;
    formatter_->format(msg, line);
    text_.append(line.data(), line.size());
  }
  void flush_() override {}

 private:
  std::string text_;
};

class CapturedLog {
 public:
  CapturedLog() : sink_(std::make_shared<TextSink>()), logger_(std::make_shared<spdlog::logger>("security", sink_)) {
    logger_->set_level(spdlog::level::warn);
  }
  const std::shared_ptr<spdlog::logger>& logger() const { return logger_; }
  std::string text() { return sink_->text(); }
  // Throws unless release() released the grant, with what the client logged.
  void released(FairSemaphore& l) {
    const Released r = l.release();
    if (r == Released::released) return;
    const char* kind = r == Released::lost ? "lost" : r == Released::not_held ? "not held" : "failed";
    throw std::runtime_error(std::string("release: ") + kind + "; the client logged: " + text());
  }

 private:
  std::shared_ptr<TextSink> sink_;
  std::shared_ptr<spdlog::logger> logger_;
};

// The deadline of the one holder of `name` in h (0: none there).
long long holder_deadline(test::RedisServer& s, const std::string& name) {
  const auto r = split(s.cmd({"ZRANGE", qkey(name, "h"), "0", "0", "WITHSCORES"}), '\n');
  return r.size() == 2 ? std::stoll(r[1]) : 0;
}

// A fresh name for a workload.
std::string fresh_name() {
  static std::atomic<int> round{0};
  return "acl:" + std::to_string(::getpid()) + ":" + std::to_string(round++);
}

// Everything a user of the library does, as `user`.
Workload workload(const Deployment& d, const std::string& user, const std::string& password,
                  const WorkloadRun& run = {}) {
  Workload w;
  const Notify mode = run.mode;
  Options o;
  o.url = d.scheme + "://" + user + ":" + password + "@" + d.hosts;
  o.liveness_ttl = 2s;
  o.connect_timeout = 500ms;
  o.notify = mode;
  o.sync_replicas = run.sync_replicas;
  CapturedLog log;
  o.logger = log.logger();
  const auto done = [&] {  // what the client logged, whatever ended the workload
    w.log = log.text();
    return w;
  };
  const std::string name = run.name.empty() ? fresh_name() : run.name;
  test::RedisServer& s = d.holder(name);
  // Stops at the first failure: it names the cause, the rest would only be
  // its consequences (and slow waits for things that cannot happen).
  auto step = [&](const char* what, const std::function<void()>& f) {
    if (!w.errors.empty()) return;
    try {
      f();
    } catch (const std::exception& e) {
      w.errors.push_back(std::string(what) + ": " + e.what());
    }
  };
  for (test::RedisServer* m : d.masters) {  // the user must be able to load the scripts
    m->cmd({"FUNCTION", "FLUSH"});
    m->cmd({"SCRIPT", "FLUSH"});
  }
  std::unique_ptr<Client> c;
  step("client", [&] { c = std::make_unique<Client>(o); });
  if (!c) return done();
  // The default lease, 10 s: the heartbeat still comes every 667 ms (a
  // third of liveness_ttl), which is what the renewal step below counts,
  // but a grant is no longer lost to a stalled heartbeat. With a 2 s lease,
  // a loaded host (a full ctest run, load 8-12 on 2 cores) lost the holder
  // on a cluster ("lease ran out before a renewal succeeded"): what is
  // judged here is the user's rights, not how short a lease holds.
  LockOptions lo;
  // A name last used by a version 1 client (its counter a string): the
  // first call carries the counter over into a version 2 record.
  d.holder(name + ":v1").cmd({"SET", "fairlock:{" + name + ":v1}:seq", "5000"});
  step("a version 1 name", [&] {
    FairLock old(*c, name + ":v1", lo);
    old.lock();
    if (old.fence() <= 5000) throw std::runtime_error("fence not above the version 1 counter");
    log.released(old);
  });
  FairLock a(*c, name, lo), b(*c, name, lo);
  step("lock", [&] { a.lock(); });
  if (!w.errors.empty()) return done();
  std::atomic<bool> b_done{false};
  std::string b_error;
  std::thread t([&] {
    try {
      b.lock();
    } catch (const std::exception& e) {
      b_error = std::string("queued lock: ") + e.what();
    }
    b_done = true;
  });
  eventually([&] { return zcard(s, name, "q") == 1 || b_done.load(); }, 5s);
  if (b_done && !b_error.empty()) w.errors.push_back(b_error);
  // The wake subscription, as the server sees it (publish: the client's
  // channel, on a cluster its shard channel of the name on the name's master;
  // keyspace: the name's wake key channel while b waits).
  w.subscribed = eventually(
      [&] {
        if (d.sharded) {
          auto r = split(s.cmd({"PUBSUB", "SHARDNUMSUB", "fairlock:{" + name + "}:wake:" + c->id()}), '\n');
          return r.size() == 2 && r[1] == "1";
        }
        if (mode == Notify::publish) {
          auto r = split(s.cmd({"PUBSUB", "NUMSUB", "fairlock:wake:" + c->id()}), '\n');
          return r.size() == 2 && r[1] == "1";
        }
        return !s.cmd({"PUBSUB", "CHANNELS", "__keyspace@*__:fairlock:*"}).empty();
      },
      3s);
  step("inspect", [&] {
    if (c->inspect(name).holder_count != 1) throw std::runtime_error("inspect: no holder");
  });
  step("list", [&] {
    if (c->list("acl:*").empty()) throw std::runtime_error("list: nothing found");
  });
  // Renewal, as the server sees it: the holder's deadline moves on three
  // times (the heartbeat ran with this user's rights; the first round may have
  // been collected before b queued, the second carried b, a waiter, too, and
  // the third starts only after the second's replies were read, so an error
  // in them is in the log by then), the client logged no permission error,
  // and it still holds.
  step("renewal", [&] {
    bool renewed = true;
    for (int round = 0; round < 3 && renewed; ++round) {
      const long long granted_until = holder_deadline(s, name);
      if (granted_until == 0) throw std::runtime_error("the holder is not in h");
      renewed = eventually([&] { return holder_deadline(s, name) > granted_until; }, 10s);
    }
    if (is_permission_error(permission_errors(log.text()))) {
      throw std::runtime_error("the client logged: " + log.text());
    }
    if (renewed && a.owns_lock()) return;
    std::string why = "the lease was not renewed";
    try {
      log.released(a);
    } catch (const std::exception& e) {
      why += std::string("; ") + e.what();
    }
    throw std::runtime_error(why);
  });
  step("unlock with handoff", [&] { log.released(a); });
  if (!w.errors.empty()) b.cancel();
  eventually([&] { return b_done.load(); }, 10s);
  t.join();
  if (!b_error.empty() && w.errors.empty()) w.errors.push_back(b_error);
  if (!w.errors.empty()) return done();
  step("handed-off grant", [&] {
    if (!b.owns_lock()) throw std::runtime_error("never granted");
  });
  step("try_lock_for timeout", [&] {
    if (a.try_lock_for(50ms)) throw std::runtime_error("got a held lock");
  });
  step("try_lock busy", [&] {
    if (a.try_lock()) throw std::runtime_error("got a held lock");
  });
  // A waiter evicted by the operator: its wait ends with EvictedError at
  // its next call (at once when it polls), or Cancelled if cancel() comes first.
  if (!w.errors.empty()) return done();
  std::thread t2([&] {
    try {
      a.lock();
      log.released(a);
    } catch (const EvictedError&) {
    } catch (const Cancelled&) {
    } catch (const std::exception& e) {
      w.errors.push_back(std::string("waiter to evict: ") + e.what());
    }
  });
  eventually([&] { return zcard(s, name, "q") == 1; }, 5s);
  step("evict", [&] {
    auto st = c->inspect(name);
    if (st.waiters.empty()) throw std::runtime_error("no waiter to evict");
    if (c->evict(name, st.waiters[0].token) != Evicted::waiter) throw std::runtime_error("not evicted");
  });
  std::this_thread::sleep_for(100ms);
  a.cancel();
  t2.join();
  step("unlock (idle cleanup)", [&] { log.released(b); });
  FairSemaphore s1(*c, name + ":sem", 2), s2(*c, name + ":sem", 2);
  step("semaphore", [&] {
    s1.lock();
    s2.lock();
    log.released(s1);
    log.released(s2);
  });
  return done();
}

// The workload on one server.
Workload workload(test::RedisServer& s, const std::string& user, const std::string& password,
                  Notify mode = Notify::publish) {
  WorkloadRun run;
  run.mode = mode;
  return workload(standalone(s), user, password, run);
}

// A permission failure as Redis reports it: NOPERM from a command of the
// client, or a refusal of a command the script called for its user.
std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& x : v) out += "\n  " + x;
  return out;
}

TEST(Security, PasswordAuth) {
  test::RedisServer s;  // (RedisServer's start-up PING cannot authenticate: set the password now)
  ASSERT_EQ(s.cmd({"CONFIG", "SET", "requirepass", "p@ss:w/rd"}), "OK");
  Options o;
  o.url = "redis://:p%40ss%3Aw%2Frd@127.0.0.1:" + std::to_string(s.port());  // percent-encoded
  o.liveness_ttl = 900ms;
  {
    Client c(o);
    FairLock a(c, "auth"), b(c, "auth");
    a.lock();
    std::thread t([&] { b.lock(); });
    Rec admin(s.port());
    ASSERT_EQ(admin.cmd({"AUTH", "p@ss:w/rd"}), "OK");
    ASSERT_TRUE(eventually([&] { return admin.cmd({"ZCARD", qkey("auth", "q")}) == "1"; }));
    a.unlock();
    t.join();
    EXPECT_TRUE(b.owns_lock());
    EXPECT_EQ(admin.cmd({"PUBSUB", "NUMSUB", "fairlock:wake:" + c.id()}), "fairlock:wake:" + c.id() + "\n1")
        << "the subscriber did not authenticate";
    b.unlock();
  }
  // Wrong and missing passwords: a clear, typed error, at once (from the
  // constructor, which meets it on its first connection).
  for (const std::string& url :
       {"redis://:wrong@127.0.0.1:" + std::to_string(s.port()), "redis://127.0.0.1:" + std::to_string(s.port())}) {
    Options bad = o;
    bad.url = url;
    bad.connect_timeout = 500ms;
    try {
      Client c(bad);
      FairLock l(c, "auth");
      l.lock();
      ADD_FAILURE() << url << ": lock() succeeded";
    } catch (const AccessDenied& e) {
      std::string m = e.what();
      EXPECT_TRUE(m.find("WRONGPASS") != std::string::npos || m.find("NOAUTH") != std::string::npos)
          << url << ": " << m;
    } catch (const std::exception& e) {
      ADD_FAILURE() << url << ": not AccessDenied: " << e.what();
    }
  }
}

// A member of mode 's' that a client of another language queued on a
// standalone server, behind a C++ holder, both as user `app`: the C++
// release hands it the permit and signals it by SPUBLISH, under app's rule.
struct ShardedHandoff {
  std::string subscribed;                // the foreign client's SSUBSCRIBE reply (its error if refused)
  std::string queued;                    // its acquire reply
  Released released = Released::failed;  // the C++ holder's release, which grants it
  std::string message;                   // what its SSUBSCRIBE received ("": nothing within 5 s)
  std::string log;                       // what the C++ client logged
};

ShardedHandoff sharded_handoff_on_standalone(test::RedisServer& s) {
  ShardedHandoff out;
  Options o;
  o.url = "redis://app:secret@127.0.0.1:" + std::to_string(s.port());
  o.liveness_ttl = 2s;
  CapturedLog log;
  o.logger = log.logger();
  const std::string name = fresh_name();
  const std::string cid = "5eed00000000f00d";
  const std::string member = "s" + cid + ":0123456789abcdef01234567:10000";
  const std::string function = std::string(detail::lua::library_name);
  const auto call = [&](const std::string& op, std::vector<std::string> args) {
    std::vector<std::string> argv = {"FCALL", function + "_" + op, "7"};
    for (const char* suffix : {"q", "w", "h", "g", "seq", "o", "ev"}) argv.push_back(qkey(name, suffix));
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  };
  Client c(o);
  FairLock holder(c, name);
  holder.lock();  // (loads the library as app, if the server lost it)
  std::unique_ptr<redisContext, decltype(&redisFree)> sub(redisConnect("127.0.0.1", s.port()), redisFree);
  const std::string channel = "fairlock:{" + name + "}:wake:" + cid;
  auto* r = static_cast<redisReply*>(redisCommand(sub.get(), "AUTH app secret"));
  freeReplyObject(r);
  r = static_cast<redisReply*>(redisCommand(sub.get(), "SSUBSCRIBE %s", channel.c_str()));
  out.subscribed = r && r->type == REDIS_REPLY_ERROR ? std::string(r->str, r->len) : "ok";
  freeReplyObject(r);
  Rec foreign(s.port());
  foreign.cmd({"AUTH", "app", "secret"});
  out.queued = foreign.cmd(call("acquire", {member, "1", "10000", "2000", "f"}));
  out.released = holder.release();
  if (out.subscribed == "ok") {
    const timeval wait{5, 0};
    redisSetTimeout(sub.get(), wait);
    void* reply = nullptr;
    if (redisGetReply(sub.get(), &reply) == REDIS_OK) {
      const auto* m = static_cast<redisReply*>(reply);
      if (m->type == REDIS_REPLY_ARRAY && m->elements == 3) {  // RESP2: "smessage", channel, message
        out.message = std::string(m->element[0]->str) + " " + m->element[2]->str;
      }
      freeReplyObject(reply);
    }
  }
  foreign.cmd(call("release", {member, "1", "h"}));
  out.log = log.text();
  return out;
}

// The rules as docs/OPERATIONS.md writes them (read from it), applied to
// real servers, for every wake mode: publish and poll with the minimal rule,
// keyspace with its addition, and a member of mode 's' on a standalone
// server (a client of another language: docs/PROTOCOL.md §6) with that
// addition, which the C++ client's own user needs too (its release is what
// signals the grant), and without which that release fails. The README's
// rule is the same rule. (On a cluster: TheClusterAclRuleIsEnough.)
TEST(Security, TheDocumentedRulesWorkInEveryWakeMode) {
  EXPECT_EQ(test::documented_acl_rule(test::source_file("README.md")), kMinimalRule)
      << "the README's ACL rule is not docs/OPERATIONS.md's";
  for (const Notify mode : {Notify::publish, Notify::poll}) {
    test::RedisServer s;
    set_user(s, "app", "secret", kMinimalRule);
    Workload w = workload(s, "app", "secret", mode);
    const char* what = mode == Notify::publish ? "publish" : "poll";
    EXPECT_TRUE(w.errors.empty()) << what << " with the minimal rule:" << joined(w.errors);
    if (mode == Notify::publish) {
      EXPECT_TRUE(w.subscribed) << "the user could not subscribe to its wake channel";
    }
  }
  // Keyspace mode needs three more permissions.
  test::RedisServer ks({"--notify-keyspace-events", "K$"});
  set_user(ks, "app", "secret", plus(kMinimalRule, kKeyspaceExtra));
  Workload k = workload(ks, "app", "secret", Notify::keyspace);
  EXPECT_TRUE(k.errors.empty()) << "keyspace mode with the minimal rule + extras:" << joined(k.errors);
  EXPECT_TRUE(k.subscribed) << "the user could not subscribe to the keyspace channel";
  // Mode 's' on a standalone server, with the documented addition: queued,
  // handed the permit by the C++ release, signalled on its shard channel.
  {
    test::RedisServer s;
    set_user(s, "app", "secret", plus(kMinimalRule, kStandaloneShardedExtra));
    const ShardedHandoff h = sharded_handoff_on_standalone(s);
    EXPECT_EQ(h.subscribed, "ok");
    EXPECT_EQ(h.queued.substr(0, 2), "0\n") << h.queued;
    EXPECT_EQ(h.released, Released::released) << "the C++ client logged: " << h.log;
    EXPECT_EQ(h.message.rfind("smessage s5eed00000000f00d:", 0), 0u) << "no signal: '" << h.message << "'";
  }
  // Without it, the C++ client's release, which signals the 's' member, is
  // refused (after the grant was written): the addition is needed.
  {
    test::RedisServer s;
    set_user(s, "app", "secret", kMinimalRule);
    const ShardedHandoff h = sharded_handoff_on_standalone(s);
    EXPECT_NE(h.subscribed, "ok") << "SSUBSCRIBE allowed without the addition";
    EXPECT_EQ(h.released, Released::failed) << "the release signalled an 's' member without +spublish";
    EXPECT_TRUE(is_permission_error(h.log)) << "the client logged: " << h.log;
  }
  std::string rule_text;
  for (const auto& r : kMinimalRule) rule_text += " " + r;
  std::cout << "[figures] minimal ACL rule (docs/OPERATIONS.md):" << rule_text << std::endl;
}

// The first 200 characters of a text, on one line.
std::string one_line(std::string text) {
  text = text.substr(0, 200);
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

// A test name of a permission: "+cluster|slots" -> "_cluster_slots".
std::string permission_id(const ::testing::TestParamInfo<std::string>& info) {
  std::string id;
  for (char c : info.param) id += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return id;
}

// A Redis Cluster for the ACL tests: 3 masters, a replica each (for
// sync_replicas' WAIT); each test sets its user on every node.
test::RedisCluster& acl_cluster() {
  static test::RedisCluster cluster;
  return cluster;
}

// ACLs are per node, and the client may ask any node (the slot map, a
// redirection): the user goes on every node.
void set_user_everywhere(test::RedisCluster& cluster, const std::string& user, const std::string& password,
                         const std::vector<std::string>& rule) {
  for (int i = 0; i < cluster.size(); ++i) set_user(cluster.node(i), user, password, rule);
}

// A fresh name whose slot master `m` serves.
std::string name_on(test::RedisCluster& cluster, int m) {
  for (;;) {
    std::string name = fresh_name();
    if (cluster.master_of_slot(cluster.slot_of(qkey(name, "q"))) == m) return name;
  }
}

// The documented rule on a cluster (docs/OPERATIONS.md: the standalone rule
// and the cluster additions, issue 35) is enough for the whole workload, on
// a name of each master, through a redis-cluster:// URL; with +wait, for
// sync_replicas too. Nothing the client logged is a permission error.
TEST(Security, TheClusterAclRuleIsEnough) {
  test::RedisCluster& cluster = acl_cluster();
  const std::vector<std::string> rule = plus(kMinimalRule, kShardedExtra);
  set_user_everywhere(cluster, "app", "secret", rule);
  const Deployment d = on_cluster(cluster, 3);
  for (int m = 0; m < 3; ++m) {
    WorkloadRun run;
    run.name = name_on(cluster, m);
    const Workload w = workload(d, "app", "secret", run);
    EXPECT_TRUE(w.errors.empty()) << "master " << m << ", with the cluster rule:" << joined(w.errors);
    EXPECT_TRUE(w.subscribed) << "master " << m << ": the user could not subscribe to its shard channel";
    EXPECT_FALSE(is_permission_error(permission_errors(w.log))) << "master " << m << ", the client logged: " << w.log;
  }
  set_user_everywhere(cluster, "app", "secret", plus(rule, kSyncExtra));
  WorkloadRun sync;
  sync.name = name_on(cluster, 1);
  sync.sync_replicas = 1;
  const Workload w = workload(d, "app", "secret", sync);
  EXPECT_TRUE(w.errors.empty()) << "sync_replicas 1, with the cluster rule + wait:" << joined(w.errors);
  EXPECT_FALSE(is_permission_error(permission_errors(w.log))) << "sync_replicas 1, the client logged: " << w.log;
  std::string extra;
  for (const auto& r : kShardedExtra) extra += " " + r;
  std::cout << "[figures] cluster ACL rule: the minimal rule +" << extra << " (sync_replicas: + +wait), 4 workloads"
            << std::endl;
}

// The cluster additions that are cheap to drop are needed: without one,
// the workload fails with a clear permission error (+spublish, the shard
// channels; +cluster|slots: the Client constructor, with no slot map), or
// the client runs without what it gives (+ssubscribe: no wake subscription,
// waiters poll). Not dropped here: +sunsubscribe (sent when an idle name's
// subscription is dropped, past a bound) and +asking (only while a slot
// migrates), each a longer test of its own.
class ClusterAclPermission : public ::testing::TestWithParam<std::string> {};

TEST_P(ClusterAclPermission, IsNeeded) {
  const std::string dropped = GetParam();
  test::RedisCluster& cluster = acl_cluster();
  std::vector<std::string> rule;
  for (const auto& r : plus(kMinimalRule, kShardedExtra)) {
    if (r != dropped) rule.push_back(r);
  }
  set_user_everywhere(cluster, "app", "secret", rule);
  WorkloadRun run;
  run.name = name_on(cluster, 0);
  const Workload w = workload(on_cluster(cluster, 3), "app", "secret", run);
  std::cout << "[figures] cluster, without '" << dropped << "': subscribed " << w.subscribed << ", "
            << (w.errors.empty() ? std::string("no error") : one_line(permission_errors(w.errors.front())))
            << std::endl;
  if (dropped == "+ssubscribe") {
    EXPECT_FALSE(w.subscribed) << "without +ssubscribe, the client still subscribed";
    EXPECT_TRUE(w.errors.empty()) << "without +ssubscribe the library falls back to polling:" << joined(w.errors);
    return;
  }
  if (dropped == "+cluster|slots") {  // from the constructor: no map, no slot, no use going on
    ASSERT_FALSE(w.errors.empty()) << "without +cluster|slots the client started";
    EXPECT_EQ(w.errors.front().rfind("client: ", 0), 0u) << "not refused at start: " << joined(w.errors);
    EXPECT_NE(w.errors.front().find("cluster|slots"), std::string::npos) << joined(w.errors);
  }
  ASSERT_FALSE(w.errors.empty()) << "without '" << dropped << "' everything still works: not needed";
  // (the error quotes the whole log: its eviction-check notices quote a NOPERM of their own)
  EXPECT_TRUE(is_permission_error(permission_errors(w.errors.front())))
      << "without '" << dropped << "', the error is unclear:" << joined(w.errors);
}

INSTANTIATE_TEST_SUITE_P(Rule, ClusterAclPermission,
                         ::testing::Values("+cluster|slots", "+spublish", "&fairlock:{*", "+ssubscribe"),
                         permission_id);

// A rule that allows EVALSHA but not functions (the rule of earlier
// versions) still works: the client runs the scripts by EVALSHA and says so
// once in its log.
TEST(Security, ARuleWithoutFunctionsRunsTheScriptsByEvalsha) {
  test::RedisServer s;
  set_user(s, "app", "secret", evalsha_rule());
  Workload w = workload(s, "app", "secret");
  EXPECT_TRUE(w.errors.empty()) << "with the EVALSHA rule:" << joined(w.errors);
  const std::string warning = "running the scripts by EVALSHA";
  const auto at = w.log.find(warning);
  EXPECT_NE(at, std::string::npos) << "no warning; the client logged: " << w.log;
  EXPECT_EQ(w.log.find(warning, at + 1), std::string::npos) << "warned more than once: " << w.log;
  EXPECT_EQ(s.cmd({"FUNCTION", "LIST"}), "") << "a library was loaded without +function|load";
}

// The documented rule must follow the scripts: every command they call is
// in it (a new redis.call in lua/ fails here until the rule is updated).
TEST(Security, ScriptsUseOnlyCommandsOfTheDocumentedRule) {
  const std::set<std::string> used = test::commands_the_scripts_call();
  ASSERT_FALSE(used.empty());
  std::set<std::string> rule(kMinimalRule.begin(), kMinimalRule.end());
  rule.insert(kKeyspaceExtra.begin(), kKeyspaceExtra.end());
  rule.insert(kShardedExtra.begin(), kShardedExtra.end());
  for (const auto& cmd : used) {
    EXPECT_TRUE(rule.count("+" + cmd)) << "the scripts call " << cmd
                                       << ", which the documented ACL rule does not allow";
  }
}

// Each permission of the rule is needed: without it some operation fails
// with a clear permission error (or, for SUBSCRIBE, wake signals stop).
class AclPermission : public ::testing::TestWithParam<std::string> {};

TEST_P(AclPermission, IsNeeded) {
  const std::string dropped = GetParam();
  test::RedisServer s;
  std::vector<std::string> rule;
  for (const auto& r : kMinimalRule) {
    if (r != dropped) rule.push_back(r);
  }
  set_user(s, "app", "secret", rule);
  Workload w = workload(s, "app", "secret");
  if (dropped == "+subscribe") {
    EXPECT_FALSE(w.subscribed) << "without +subscribe, the client still subscribed";
    EXPECT_TRUE(w.errors.empty()) << "without +subscribe the library falls back to polling:" << joined(w.errors);
    return;
  }
  ASSERT_FALSE(w.errors.empty()) << "without '" << dropped << "' everything still works: not needed";
  EXPECT_TRUE(is_permission_error(permission_errors(w.errors.front())))
      << "without '" << dropped << "', the error is unclear:" << joined(w.errors);
  std::cout << "[figures] without '" << dropped << "': " << one_line(permission_errors(w.errors.front())) << std::endl;
}

std::vector<std::string> droppable() {
  std::vector<std::string> out;
  for (const auto& r : kMinimalRule) {
    if (r != "resetkeys" && r != "resetchannels" && r != "-@all") out.push_back(r);
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Rule, AclPermission, ::testing::ValuesIn(droppable()), permission_id);

TEST(Security, UserWithoutPermissionsGetsAClearError) {
  test::RedisServer s;
  struct U {
    const char* what;
    std::vector<std::string> rule;
  };
  for (const U& u : {U{"no commands", {"~fairlock:*", "&fairlock:wake:*", "-@all"}},
                     U{"another key prefix", {"~other:*", "&fairlock:wake:*", "+@all"}},
                     U{"no channel", {"~fairlock:*", "resetchannels", "+@all"}},
                     U{"read-only",
                       {"~fairlock:*", "&fairlock:wake:*", "-@all", "+@read", "+fcall", "+function|load", "+evalsha",
                        "+script|load"}}}) {
    set_user(s, "limited", "pw", u.rule);
    Workload w = workload(s, "limited", "pw");
    ASSERT_FALSE(w.errors.empty()) << u.what << ": no error at all";
    EXPECT_TRUE(is_permission_error(permission_errors(w.errors.front())))
        << u.what << ": the first error is unclear:" << joined(w.errors);
    std::cout << "[figures] user with " << u.what << ": " << w.errors.size()
              << " errors, first: " << (w.errors.empty() ? "-" : w.errors[0].substr(0, 160)) << std::endl;
  }
}

// Tokens: 96 random bits per claim, 64 per client, no structure a guesser
// could use; a guessed member can neither release nor evict.
TEST(Security, TokensAreUnguessable) {
  test::RedisServer& s = test::server();
  constexpr int kClients = 8, kClaims = 250;
  std::set<std::string> tokens, cids;
  constexpr int kTokenBits = 96;
  std::vector<std::bitset<kTokenBits>> bits;
  for (int c = 0; c < kClients; ++c) {
    Options o;
    o.url = s.url();
    o.liveness_ttl = 900ms;
    Client client(o);
    ASSERT_TRUE(cids.insert(client.id()).second) << "two clients share the id " << client.id();
    ASSERT_EQ(client.id().size(), 16u);
    const std::string name = "tokens:" + std::to_string(::getpid()) + ":" + std::to_string(c);
    FairLock lock(client, name);
    for (int i = 0; i < kClaims; ++i) {
      lock.lock();
      auto st = client.inspect(name);
      ASSERT_EQ(st.holders.size(), 1u);
      const std::string t = st.holders[0].token;
      ASSERT_EQ(t.size(), 1 + 16 + 1 + kTokenBits / 4u + 6) << t;  // then ":10000", the default lease (version 6)
      ASSERT_EQ(t.substr(18 + kTokenBits / 4), ":10000") << t;
      std::string hex = t.substr(18, kTokenBits / 4);
      ASSERT_EQ(hex.find_first_not_of("0123456789abcdef"), std::string::npos) << t;
      ASSERT_TRUE(tokens.insert(hex).second) << "token repeated: " << hex;
      std::bitset<kTokenBits> b;
      for (int d = 0; d < kTokenBits / 4; ++d) {
        int v = std::stoi(hex.substr(static_cast<size_t>(d), 1), nullptr, 16);
        for (int k = 0; k < 4; ++k) b[static_cast<size_t>(d) * 4 + static_cast<size_t>(k)] = (v >> k) & 1;
      }
      bits.push_back(b);
      lock.unlock();
    }
  }
  // Every bit position is set in about half of the tokens (a binomial with
  // n = 2000: mean 1000, sd 22; the bound is 9 sd), and consecutive tokens
  // differ in about half of their bits (the bound is 8 sd of 48 +- 4.9).
  const auto n = static_cast<double>(bits.size());
  int worst_bias = 0;
  for (size_t pos = 0; pos < kTokenBits; ++pos) {
    int ones = 0;
    for (auto& b : bits) ones += b[pos];
    worst_bias = std::max(worst_bias, std::abs(ones - static_cast<int>(n / 2)));
  }
  EXPECT_LT(worst_bias, 200) << "a bit position is biased";
  for (size_t i = 1; i < bits.size(); ++i) {
    int diff = static_cast<int>((bits[i] ^ bits[i - 1]).count());
    EXPECT_GT(diff, 48 - 39) << "tokens " << i - 1 << " and " << i << " are related";
    EXPECT_LT(diff, 48 + 39) << "tokens " << i - 1 << " and " << i << " are related";
  }
  // A guessed member (right client id, wrong token) cannot release or evict.
  Options o;
  o.url = s.url();
  Client client(o);
  const std::string name = "tokens-guess:" + std::to_string(::getpid());
  FairLock lock(client, name);
  lock.lock();
  std::string real = client.inspect(name).holders.at(0).token;
  std::string guess = real;
  guess.back() = guess.back() == '0' ? '1' : '0';
  RawParticipant guesser(s, name, guess);
  EXPECT_EQ(guesser.release(), "0") << "a guessed token released the lock";
  EXPECT_EQ(client.evict(name, guess), Evicted::none);
  EXPECT_TRUE(lock.owns_lock());
  EXPECT_EQ(client.inspect(name).holders.at(0).token, real);
  lock.unlock();
  std::cout << "[figures] " << bits.size() << " tokens from " << cids.size()
            << " clients: all distinct, worst bit bias " << worst_bias << "/" << static_cast<int>(n / 2) << std::endl;
}

}  // namespace
}  // namespace fairlock::faults
