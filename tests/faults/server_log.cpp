#include "server_log.h"

#include <poll.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <tuple>

#include "fairlock_lua.h"

namespace fairlock::faults {

namespace {

std::int64_t wall_us() {
  timeval tv{};
  gettimeofday(&tv, nullptr);
  return static_cast<std::int64_t>(tv.tv_sec) * 1000000 + tv.tv_usec;
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

double score(const std::string& s) {
  if (s == "inf" || s == "+inf") return std::numeric_limits<double>::infinity();
  if (s == "-inf") return -std::numeric_limits<double>::infinity();
  return std::strtod(s.c_str(), nullptr);
}

bool positive_integer(const std::string& s, std::uint64_t& out) {
  if (s.empty() || s.size() > 16) return false;  // fences stay below 2^53
  std::uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  if (v == 0) return false;
  out = v;
  return true;
}

// f[from, to) is one or more characters, each one of `digits`.
bool all_of(const std::string& f, std::size_t from, std::size_t to, std::string_view digits) {
  if (from >= to) return false;
  for (std::size_t i = from; i < to; ++i) {
    if (digits.find(f[i]) == std::string_view::npos) return false;
  }
  return true;
}

// A queue member "<p|k|n><hex>:<hex>", with version 6's ":<lease ms>"
// (decimal) or without (version 5's); other g fields are bookkeeping.
bool is_member(const std::string& f) {
  constexpr std::string_view hex = "0123456789abcdef", decimal = "0123456789";
  if (f.size() < 4 || (f[0] != 'p' && f[0] != 'k' && f[0] != 'n')) return false;
  const auto colon = f.find(':');
  if (colon == std::string::npos || !all_of(f, 1, colon, hex)) return false;
  const auto lease = f.find(':', colon + 1);
  if (lease == std::string::npos) return all_of(f, colon + 1, f.size(), hex);
  return all_of(f, colon + 1, lease, hex) && all_of(f, lease + 1, f.size(), decimal);
}

// The process of a member, the key of its liveness in w: its text before
// the first ':' (a member without one is its own).
std::string process_of(const std::string& member) { return member.substr(0, member.find(':')); }

// The words of o's value, "<member> <fence> <permits> <granted ms>" (as
// many as there are).
std::vector<std::string> words(const std::string& v) {
  std::vector<std::string> out;
  std::istringstream in(v);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

constexpr std::int64_t kForever = std::numeric_limits<std::int64_t>::max() / 4;  // o without an expiry

// o's deadline (ms) as the replay keeps it, for an expiry `px` ms from now
// set by a command whose MONITOR line has the time `line_ts`, in a script
// whose EVALSHA line has the time `start_ts` (us). Redis takes that "now"
// from its own clock while the script runs (7.0: as it runs the command;
// later versions: as the script starts), which MONITOR stamps a little
// before (the EVALSHA line) or after (the command's line, once it ran). So:
// the command's line in whole ms + PX, minus 1 ms for the skew between a
// stamp and Redis's clock (a stamp that crossed into the next ms); and never
// later than the same from the script's start (a line stamped later still:
// the server was descheduled in between). Redis holds o at least until
// then: a removal before it removes a live holder, never a false one. Once
// it has passed, Redis may still hold o for a ms or so (o_expired).
std::int64_t o_deadline(std::int64_t line_ts, std::int64_t start_ts, std::int64_t px) {
  return std::min(line_ts, start_ts) / 1000 + px - 1;
}

std::string fmt(double d) {
  std::ostringstream o;
  o.precision(15);
  o << d;
  return o.str();
}

// Returns {had_sentinel, entries}: KEYS[1] is a sentinel key this log sets;
// finding it gone after a reconnect means the server lost its data. Each
// entry is {key, type, contents, PTTL}; strings too: the inline holder o
// (its PTTL is its grant deadline) and a version 1 counter.
const char* kSnapshot = R"lua(
local had = redis.call('EXISTS', KEYS[1])
redis.call('SET', KEYS[1], '1')
local out = {}
for _, k in ipairs(redis.call('KEYS', ARGV[2] .. ':{*')) do
  local t = redis.call('TYPE', k)['ok']
  if t == 'zset' then
    out[#out + 1] = {k, t, redis.call('ZRANGE', k, 0, -1, 'WITHSCORES'), redis.call('PTTL', k)}
  elseif t == 'hash' then
    out[#out + 1] = {k, t, redis.call('HGETALL', k), redis.call('PTTL', k)}
  elseif t == 'string' then
    out[#out + 1] = {k, t, {redis.call('GET', k)}, redis.call('PTTL', k)}
  end
end
return {had, out}
)lua";

}  // namespace

bool parse_monitor_line(const std::string& line, std::int64_t& ts, bool& from_lua, std::vector<std::string>& argv) {
  argv.clear();
  auto dot = line.find('.');
  auto sp = line.find(' ');
  if (dot == std::string::npos || sp == std::string::npos || dot > sp) return false;
  ts = std::atoll(line.substr(0, dot).c_str()) * 1000000LL + std::atoll(line.substr(dot + 1, sp - dot - 1).c_str());
  auto open = line.find('[', sp);
  auto close = line.find(']', open);
  if (open == std::string::npos || close == std::string::npos) return false;
  std::string src = line.substr(open + 1, close - open - 1);
  from_lua = src.size() >= 4 && src.compare(src.size() - 4, 4, " lua") == 0;
  size_t i = close + 1;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    if (i >= line.size()) break;
    if (line[i] != '"') return false;
    ++i;
    std::string tok;
    bool closed = false;
    while (i < line.size()) {
      char c = line[i++];
      if (c == '"') {
        closed = true;
        break;
      }
      if (c != '\\' || i >= line.size()) {
        tok.push_back(c);
        continue;
      }
      char e = line[i++];
      switch (e) {
        case 'n': tok.push_back('\n'); break;
        case 'r': tok.push_back('\r'); break;
        case 't': tok.push_back('\t'); break;
        case 'a': tok.push_back('\a'); break;
        case 'b': tok.push_back('\b'); break;
        case 'x':
          if (i + 1 < line.size() && hexval(line[i]) >= 0 && hexval(line[i + 1]) >= 0) {
            tok.push_back(static_cast<char>(hexval(line[i]) * 16 + hexval(line[i + 1])));
            i += 2;
          }
          break;
        default: tok.push_back(e);
      }
    }
    if (!closed) return false;
    argv.push_back(std::move(tok));
  }
  return !argv.empty();
}

ServerLog::ServerLog(int port, std::string prefix)
    : port_(port), prefix_(std::move(prefix)), sentinel_("flcheck:sentinel:" + std::to_string(::getpid())) {
  for (const auto& script : fairlock::detail::lua::kScripts) {
    script_kind_[std::string(script.sha)] = script.name;
    script_kind_[std::string(script.function)] = script.name;  // FCALL names it instead
  }
  if (port_ == 0) return;  // offline
  // Be in sync before the test starts: the first snapshot is taken here.
  for (int attempt = 0; attempt < 100 && !mon_; ++attempt) {
    if (!connect_and_resync()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  thread_ = std::thread([this] { run(); });
}

ServerLog::~ServerLog() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  if (mon_) redisFree(mon_);
  if (pending_snapshot_) freeReplyObject(pending_snapshot_);
}

void ServerLog::violation(const std::string& what) {
  if (violations_.size() < 200) violations_.push_back(what);
}

bool ServerLog::connect_and_resync() {
  timeval tv{1, 0};
  redisContext* m = redisConnectWithTimeout("127.0.0.1", port_, tv);
  if (!m || m->err) {
    if (m) redisFree(m);
    return false;
  }
  redisSetTimeout(m, timeval{5, 0});
  auto* ok = static_cast<redisReply*>(redisCommand(m, "MONITOR"));
  if (!ok) {
    redisFree(m);
    return false;
  }
  freeReplyObject(ok);
  redisContext* s = redisConnectWithTimeout("127.0.0.1", port_, tv);
  if (!s || s->err) {
    if (s) redisFree(s);
    redisFree(m);
    return false;
  }
  redisSetTimeout(s, timeval{5, 0});
  std::string marker = "fl-resync-" + std::to_string(::getpid()) + "-" + std::to_string(resyncs_);
  auto* snap = static_cast<redisReply*>(
      redisCommand(s, "EVAL %s 1 %s %s %s", kSnapshot, sentinel_.c_str(), marker.c_str(), prefix_.c_str()));
  redisFree(s);
  if (!snap || snap->type != REDIS_REPLY_ARRAY || snap->elements != 2) {
    if (snap) freeReplyObject(snap);
    redisFree(m);
    return false;
  }
  if (pending_snapshot_) freeReplyObject(pending_snapshot_);
  pending_snapshot_ = snap;
  marker_ = marker;
  mon_ = m;
  ++resyncs_;
  return true;
}

// `ts`: the time of the snapshot script's own MONITOR line, stamped before
// it ran (o's deadline from its PTTL).
void ServerLog::apply_snapshot(const redisReply& reply, std::int64_t ts) {
  const bool had_sentinel = reply.element[0]->integer == 1;
  const redisReply& r = *reply.element[1];
  std::map<std::string, NameState> fresh;
  std::map<std::string, std::uint64_t> seq;
  for (size_t i = 0; i < r.elements; ++i) {
    const redisReply& e = *r.element[i];
    if (e.elements != 4) continue;
    std::string key(e.element[0]->str, e.element[0]->len), type(e.element[1]->str, e.element[1]->len);
    const redisReply& v = *e.element[2];
    std::string name, suffix;
    if (!split_key(key, name, suffix)) continue;
    NameState& st = fresh[name];
    const long long pttl = e.element[3]->integer;
    // PTTL 0: the key exists but is due now (it expired while the snapshot
    // ran); only -1 means no expiry. Counted from the snapshot's own stamp,
    // not from when the replay applies it: lines stamped in between must
    // not find a key Redis has already expired (dropping one a little early
    // is safe: a key at its x holds only entries dead for a second).
    if (pttl >= 0 && suffix != "o") st.expire_at[suffix] = (ts / 1000 + pttl + 1) * 1000;
    if (type == "zset") {
      auto& z = suffix == "q" ? st.q : suffix == "w" ? st.w : st.h;
      if (suffix != "q" && suffix != "w" && suffix != "h") continue;
      for (size_t j = 0; j + 1 < v.elements; j += 2) {
        z[std::string(v.element[j]->str, v.element[j]->len)] =
            score(std::string(v.element[j + 1]->str, v.element[j + 1]->len));
      }
    } else if (type == "hash" && (suffix == "g" || suffix == "seq")) {
      auto& fields = suffix == "g" ? st.g : st.rec;
      for (size_t j = 0; j + 1 < v.elements; j += 2) {
        fields[std::string(v.element[j]->str, v.element[j]->len)] =
            std::string(v.element[j + 1]->str, v.element[j + 1]->len);
      }
    } else if (type == "string" && suffix == "seq" && v.elements == 1 && v.element[0]->type == REDIS_REPLY_STRING) {
      st.rec["s"] = std::string(v.element[0]->str, v.element[0]->len);  // a version 1 counter
    } else if (type == "string" && suffix == "o" && v.elements == 1 && v.element[0]->type == REDIS_REPLY_STRING) {
      auto w = words(std::string(v.element[0]->str, v.element[0]->len));
      w.resize(3);
      st.o = Inline{w[0], w[1], w[2], pttl >= 0 ? o_deadline(ts, ts, pttl) : kForever};
    }
    if (suffix == "seq" && st.rec.count("s")) seq[name] = std::strtoull(st.rec["s"].c_str(), nullptr, 10);
  }
  // Data lost: the sentinel is gone after a reconnect, or a counter went back.
  bool lost = synced_once_ && !had_sentinel;
  for (auto& [name, st] : names_) {
    if (st.last_fence == 0) continue;
    auto it = seq.find(name);
    if (it == seq.end() || it->second < st.last_fence) lost = true;
  }
  synced_once_ = true;
  std::int64_t now = wall_us();
  if (lost) {
    ++epoch_;
    losses_.push_back(LossWindow{down_since_ ? down_since_ : now, now, "restart without the data"});
  }
  for (auto& [name, st] : fresh) {
    std::uint64_t max_fence = 0;
    for (auto& [f, v] : st.g) {
      std::uint64_t x = 0;
      if (is_member(f) && positive_integer(v.substr(0, v.find(':')), x)) max_fence = std::max(max_fence, x);
    }
    std::uint64_t inline_fence = 0;  // the inline holder's; an older version's is the record's s
    if (st.o && positive_integer(st.o->fence, inline_fence)) max_fence = std::max(max_fence, inline_fence);
    if (st.rec.count("o") && positive_integer(st.rec["s"], inline_fence)) max_fence = std::max(max_fence, inline_fence);
    auto old = names_.find(name);
    st.last_fence = max_fence;
    if (!lost && old != names_.end()) st.last_fence = std::max(st.last_fence, old->second.last_fence);
  }
  if (!lost) {  // names that are idle now keep their last fence
    for (auto& [name, st] : names_) {
      if (!fresh.count(name) && st.last_fence > 0) fresh[name].last_fence = st.last_fence;
    }
  }
  names_ = std::move(fresh);
  if (down_since_) gaps_.push_back(LossWindow{down_since_, now, "MONITOR reconnect"});
  down_since_ = 0;
}

void ServerLog::run() {
  while (!stop_.load()) {
    if (!mon_) {
      if (!connect_and_resync()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        continue;
      }
    }
    pollfd p{mon_->fd, POLLIN, 0};
    int n = ::poll(&p, 1, 50);
    if (n <= 0) continue;
    bool broken = redisBufferRead(mon_) != REDIS_OK;
    for (;;) {
      void* raw = nullptr;
      if (redisGetReplyFromReader(mon_, &raw) != REDIS_OK) {
        broken = true;
        break;
      }
      if (!raw) break;
      auto* r = static_cast<redisReply*>(raw);
      if (r->type == REDIS_REPLY_STATUS || r->type == REDIS_REPLY_STRING) handle_line(std::string(r->str, r->len));
      freeReplyObject(r);
    }
    if (broken) {
      // The stream may have stopped in the middle of a script's commands
      // (the server was killed while sending them to us; the script itself
      // ran whole): what was seen of it cannot be judged. The state is read
      // again from a snapshot on reconnect. What the server did after the
      // last line seen may be missing: the server may write a reply to a
      // client before its MONITOR output, so a client may hold a grant whose
      // lines a kill cut off.
      drop_script();
      redisFree(mon_);
      mon_ = nullptr;
      if (!down_since_) down_since_ = last_ts_ > 0 ? last_ts_ : wall_us();
    }
  }
}

bool ServerLog::stop() {
  if (!thread_.joinable()) return stop_seen_.load();
  stop_marker_ = "fl-stop-" + std::to_string(::getpid()) + "-" + std::to_string(wall_us());
  stop_marker_set_ = true;  // publishes stop_marker_ to the monitor thread
  bool sent = false;
  auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < end && !stop_seen_.load()) {
    if (!sent) {
      redisContext* c = redisConnectWithTimeout("127.0.0.1", port_, timeval{1, 0});
      if (c && !c->err) {
        auto* r = static_cast<redisReply*>(redisCommand(c, "ECHO %s", stop_marker_.c_str()));
        sent = r != nullptr;
        if (r) freeReplyObject(r);
      }
      if (c) redisFree(c);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  stop_ = true;
  thread_.join();
  finish_script();
  return stop_seen_.load();
}

bool ServerLog::split_key(const std::string& key, std::string& name, std::string& suffix) const {
  std::string head = prefix_ + ":{";
  if (key.compare(0, head.size(), head) != 0) return false;
  auto close = key.find("}:", head.size());  // names have no braces
  if (close == std::string::npos) return false;
  name = key.substr(head.size(), close - head.size());
  suffix = key.substr(close + 2);
  return true;
}

void ServerLog::handle_line(const std::string& line) {
  ++lines_;
  std::int64_t ts = 0;
  bool from_lua = false;
  std::vector<std::string> argv;
  if (!parse_monitor_line(line, ts, from_lua, argv)) return;
  last_ts_ = ts;
  if (!marker_.empty()) {
    if (!from_lua && lower(argv[0]) == "eval" && argv.size() >= 5 && argv[4] == marker_) {
      apply_snapshot(*pending_snapshot_, ts);
      freeReplyObject(pending_snapshot_);
      pending_snapshot_ = nullptr;
      marker_.clear();
      in_script_ = true;  // the snapshot's own reads follow
      kind_ = "snapshot";
    }
    return;
  }
  if (from_lua) {
    if (in_script_) lua(ts, argv);
    return;
  }
  finish_script();
  if (stop_marker_set_.load() && argv.size() == 2 && lower(argv[0]) == "echo" && argv[1] == stop_marker_) {
    stop_seen_ = true;
    return;
  }
  client_cmd(ts, argv);
}

// A heartbeat's arguments after permits and liveness_ms, from `from`: an
// optional floor (an odd count), then member, lease pairs (docs/PROTOCOL.md).
void ServerLog::heartbeat_args(const std::vector<std::string>& argv, std::size_t from) {
  if (from >= argv.size()) return;
  if ((argv.size() - from) % 2 == 1) {
    floor_ = std::strtod(argv[from].c_str(), nullptr);
    ++from;
  }
  for (std::size_t i = from; i < argv.size(); i += 2) own_.insert(argv[i]);
  if (from < argv.size()) floor_process_ = process_of(argv[from]);
}

// The heartbeat's floor removes the calling process's queued members at or
// below it that the call does not send: ones the process no longer has.
bool ServerLog::dropped_by_floor(const std::string& member, double ticket) const {
  return kind_ == "heartbeat" && floor_ > 0 && own_.count(member) == 0 && process_of(member) == floor_process_ &&
         ticket <= floor_;
}

void ServerLog::client_cmd(std::int64_t ts, const std::vector<std::string>& argv) {
  std::string cmd = lower(argv[0]);
  if (cmd == "evalsha" || cmd == "eval" || cmd == "fcall") {
    ++scripts_;
    in_script_ = true;
    script_ts_ = ts;
    kind_ = "other";
    own_.clear();
    floor_ = 0;
    if (cmd != "eval" && argv.size() >= 3) {
      auto it = script_kind_.find(argv[1]);
      if (it != script_kind_.end()) kind_ = it->second;
      size_t nkeys = std::strtoul(argv[2].c_str(), nullptr, 10);
      size_t first_arg = 3 + nkeys;
      std::string name, suffix;
      if (nkeys > 0 && argv.size() > 3 && split_key(argv[3], name, suffix)) expire(name, ts);
      if (kind_ == "heartbeat") {
        heartbeat_args(argv, first_arg + 2);
      } else if (first_arg < argv.size()) {
        own_.insert(argv[first_arg]);
      }
    }
    return;
  }
  if (cmd == "flushall" || cmd == "flushdb") {
    names_.clear();
    ++epoch_;
    losses_.push_back(LossWindow{ts, ts, cmd});
    // Put the sentinel back, so that a later reconnect does not count this
    // loss again.
    if (port_ > 0) {
      redisContext* c = redisConnectWithTimeout("127.0.0.1", port_, timeval{1, 0});
      if (c && !c->err) freeReplyObject(redisCommand(c, "SET %s 1", sentinel_.c_str()));
      if (c) redisFree(c);
    }
    return;
  }
  static const std::set<std::string> readonly = {
      "zcard",  "zscore", "zrange", "zrank",  "zrangebyscore", "hget",   "hmget",   "hgetall", "hlen",
      "exists", "keys",   "type",   "get",    "pttl",          "ttl",    "scan",    "dump",    "object",
      "echo",   "ping",   "time",   "info",   "llen",          "lrange", "strlen",  "zcount",  "hexists",
      "pubsub", "config", "client", "script", "function",      "acl",    "monitor", "debug",   "subscribe"};
  if (readonly.count(cmd)) return;
  for (size_t i = 1; i < argv.size(); ++i) {
    std::string name, suffix;
    if (split_key(argv[i], name, suffix)) tainted_.insert(name);
  }
}

void ServerLog::expire(const std::string& name, std::int64_t ts) {
  auto it = names_.find(name);
  if (it == names_.end()) return;
  NameState& st = it->second;
  for (auto e = st.expire_at.begin(); e != st.expire_at.end();) {
    if (ts < e->second) {
      ++e;
      continue;
    }
    if (e->first == "q") st.q.clear();
    else if (e->first == "w") st.w.clear();
    else if (e->first == "h") st.h.clear();
    else if (e->first == "g") st.g.clear();
    e = st.expire_at.erase(e);
  }
  if (st.o && ts / 1000 > st.o->deadline_ms) {  // Redis deleted o at its PX
    st.o_expired.swap(st.o);
    st.o.reset();
  }
}

void ServerLog::lua(std::int64_t ts, const std::vector<std::string>& argv) {
  if (argv.size() < 2) return;
  std::string cmd = lower(argv[0]);
  std::string name, suffix;
  static const std::set<std::string> writes = {"zadd", "zrem",    "zpopmin", "hset",   "hdel",    "set",   "incr",
                                               "del",  "zincrby", "hincrby", "expire", "pexpire", "unlink"};
  if (kind_ == "other" || kind_ == "snapshot") {  // not one of the four protocol scripts
    if (!writes.count(cmd)) return;
    for (size_t i = 1; i < argv.size(); ++i) {
      if (split_key(argv[i], name, suffix)) tainted_.insert(name);
    }
    return;
  }
  if (cmd == "del") {
    for (size_t i = 1; i < argv.size(); ++i) {
      if (!split_key(argv[i], name, suffix)) continue;
      NameState& st = names_[name];
      if (!tainted_.count(name) && (suffix == "g" || suffix == "w") && (!st.q.empty() || !st.h.empty())) {
        violation("cleanup of " + name + " (DEL " + suffix + ") while q has " + std::to_string(st.q.size()) +
                  " and h has " + std::to_string(st.h.size()) + " entries");
      }
      // Entries a DEL removes are judged as removals: a live one needs a
      // reason (its owner's release or cancel, an evict), as with ZREM.
      if (suffix == "q") {
        std::vector<std::string> members;
        for (const auto& e : st.q) members.push_back(e.first);
        for (const auto& m : members) remove_waiter(ts, name, st, m);
      } else if (suffix == "w") {
        st.w.clear();
      } else if (suffix == "h") {
        for (const auto& [m, deadline] : st.h) h_removed_.push_back(HRemoval{name, m, deadline, ts, From::h, ""});
        st.h.clear();
      } else if (suffix == "g") {
        st.g.clear();
      } else if (suffix == "o") {
        inline_removed(ts, name, st);
      }
      if (suffix == "seq") {  // the record rewritten (version 1 migration): the last fence stands
        record_holder_removed(ts, name, st);
        st.rec.clear();
      }
      st.expire_at.erase(suffix);
    }
    return;
  }
  if (!split_key(argv[1], name, suffix)) return;
  NameState& st = names_[name];
  const bool check = !tainted_.count(name);
  if (suffix == "o") {
    inline_cmd(ts, cmd, argv, name, st);
    return;
  }
  if (cmd == "pexpire" && argv.size() >= 3) {
    st.expire_at[suffix] = ts + std::atoll(argv[2].c_str()) * 1000;
    return;
  }
  if (cmd == "pexpireat" && argv.size() >= 3) {  // Redis expires a key once now (ms) > the time set
    st.expire_at[suffix] = (std::atoll(argv[2].c_str()) + 1) * 1000;
    return;
  }
  if (cmd == "zadd") {
    for (size_t i = 2; i + 1 < argv.size(); i += 2) {
      double sc = score(argv[i]);
      const std::string& m = argv[i + 1];
      if (suffix == "q") {
        st.q[m] = sc;
      } else if (suffix == "w") {
        st.w[m] = sc;
      } else if (suffix == "h") {
        bool fresh = !st.h.count(m);
        st.h[m] = sc;
        if (fresh) new_holders_.insert({name, m});
        if (check) permit_checks_.emplace(name, "ZADD h " + m);
      }
    }
  } else if (cmd == "zrem") {
    for (size_t i = 2; i < argv.size(); ++i) {
      const std::string& m = argv[i];
      if (suffix == "q") {
        remove_waiter(ts, name, st, m);
      } else if (suffix == "w") {  // a process leaves w (prune, the move to version 4); its waiters stay in q
        auto it = st.w.find(m);
        if (it == st.w.end()) continue;
        if (check) check_w_removal(ts, name, it->first, it->second);
        removed_w_.emplace(m, it->second);
        st.w.erase(it);
      } else if (suffix == "h") {
        auto it = st.h.find(m);
        if (it == st.h.end()) continue;
        h_removed_.push_back(HRemoval{name, m, it->second, ts, From::h, ""});
        st.h.erase(it);
      }
    }
  } else if (cmd == "zpopmin" && suffix == "q") {
    const long count = argv.size() > 2 ? std::atol(argv[2].c_str()) : 1;
    for (long i = 0; i < count && !st.q.empty(); ++i) {
      // The lowest score, ties by member: Redis's order.
      auto head = std::min_element(st.q.begin(), st.q.end(), [](const auto& a, const auto& b) {
        return std::tie(a.second, a.first) < std::tie(b.second, b.first);
      });
      const std::string m = head->first;  // a copy: remove_waiter erases the entry
      remove_waiter(ts, name, st, m);
    }
  } else if (cmd == "hset" && suffix == "g") {
    for (size_t i = 2; i + 1 < argv.size(); i += 2) {
      const std::string& field = argv[i];
      const std::string& value = argv[i + 1];
      st.g[field] = value;
      if (!is_member(field)) continue;  // bookkeeping of older versions ("permits", "x")
      // A grant, or the inline holder moved into h (inflate); the value is
      // "<fence>" or "<fence>:<granted ms>".
      std::string fence = value.substr(0, value.find(':'));
      if (!(st.h.count(field) && moved(name, field, fence, From::o))) {
        grant(ts, name, st, field, fence);
      } else if (check) {
        check_move_deadline(ts, name, field, st.h[field]);
      }
    }
  } else if (cmd == "hdel" && suffix == "g") {
    for (size_t i = 2; i < argv.size(); ++i) st.g.erase(argv[i]);
  } else if (suffix == "seq") {
    record_cmd(ts, cmd, argv, name, st);
  }
}

// HSET/HDEL on the record: a new ticket ("s"), the permit count ("p"), x.
// An older version's inline holder (o, d, t) leaves it (HDEL "o"): the
// upgrade moves it into o (inline_set), or drops it (judged as a removal).
void ServerLog::record_cmd(std::int64_t ts, const std::string& cmd, const std::vector<std::string>& argv,
                           const std::string& name, NameState& st) {
  if (cmd == "hdel") {
    if (std::find(argv.begin() + 2, argv.end(), "o") != argv.end()) record_holder_removed(ts, name, st);
    for (size_t i = 2; i < argv.size(); ++i) st.rec.erase(argv[i]);
    return;
  }
  if (cmd != "hset") return;
  for (size_t i = 2; i + 1 < argv.size(); i += 2) st.rec[argv[i]] = argv[i + 1];
}

// SET, PEXPIRE and PEXPIREAT of o (GET and PTTL only read it; DEL is a
// removal: lua).
void ServerLog::inline_cmd(std::int64_t ts, const std::string& cmd, const std::vector<std::string>& argv,
                           const std::string& name, NameState& st) {
  if (cmd == "set") {
    inline_set(ts, argv, name, st);
    return;
  }
  if ((cmd != "pexpire" && cmd != "pexpireat") || argv.size() < 3) return;
  // A renewal (acquire's retry, heartbeat): the script found o its caller's,
  // so o is there even if its deadline passed here a moment ago.
  if (!st.o) st.o.swap(st.o_expired);
  if (!st.o) return;
  // PEXPIREAT: Redis keeps o while its clock (ms) is at most the time set.
  const std::int64_t deadline =
      cmd == "pexpireat" ? std::atoll(argv[2].c_str()) : o_deadline(ts, script_ts_, std::atoll(argv[2].c_str()));
  const bool gt = argv.size() > 3 && lower(argv[3]) == "gt";  // never shortens it
  // The scripts renew only to lengthen a grant (renew_inline): an earlier
  // deadline than the replay's (a lower bound of Redis's) cut it short.
  if (!gt && deadline < st.o->deadline_ms - 1 && !tainted_.count(name)) {
    violation(name + ": inline holder " + st.o->member + "'s deadline cut from " + std::to_string(st.o->deadline_ms) +
              " to " + std::to_string(deadline) + " by " + kind_);
  }
  st.o->deadline_ms = gt ? std::max(st.o->deadline_ms, deadline) : deadline;
}

// SET o "<member> <fence> <permits> <granted ms>" PX <ms>: an inline grant
// of that fence; or, re-creating the holder this script just took out of an
// older version's record (same member and fence), the upgrade: a move.
// Whatever o held before is gone.
void ServerLog::inline_set(std::int64_t ts, const std::vector<std::string>& argv, const std::string& name,
                           NameState& st) {
  if (argv.size() < 3) return;
  auto w = words(argv[2]);
  w.resize(3);
  Inline o{w[0], w[1], w[2], kForever};
  for (size_t i = 3; i + 1 < argv.size(); ++i) {
    if (lower(argv[i]) == "px") o.deadline_ms = o_deadline(ts, script_ts_, std::atoll(argv[i + 1].c_str()));
  }
  inline_removed(ts, name, st);  // one overwritten: judged as a removal
  st.o = o;
  if (moved(name, o.member, o.fence, From::record)) return;
  grant(ts, name, st, o.member, o.fence);
  if (!tainted_.count(name)) permit_checks_.emplace(name, "an inline grant to " + o.member);
}

void ServerLog::remove_waiter(std::int64_t ts, const std::string& name, NameState& st, const std::string& m) {
  auto it = st.q.find(m);
  if (it == st.q.end()) return;
  auto w = st.w.find(process_of(m));
  if (w != st.w.end()) removed_w_.emplace(w->first, w->second);
  q_removed_[m] = QRemoval{name, ts, it->second};
  st.q.erase(it);
}

// A grant of `fence_text` to `member`: it goes to the lowest ticket, above
// the name's last fence, and is kept for linking the clients' history.
void ServerLog::grant(std::int64_t ts, const std::string& name, NameState& st, const std::string& member,
                      const std::string& fence_text) {
  granted_.insert({name, member});
  const bool check = !tainted_.count(name);
  std::uint64_t fence = 0;
  const bool ok = positive_integer(fence_text, fence);
  if (check && !ok) violation(name + ": grant to " + member + " with a garbage fence '" + fence_text + "'");
  if (!ok) return;
  if (check) {
    for (auto& [m2, ticket] : st.q) {
      if (ticket < static_cast<double>(fence)) {
        violation(name + ": fence " + std::to_string(fence) + " granted to " + member + " while " + m2 +
                  " with the smaller ticket " + fmt(ticket) + " still waits");
        break;
      }
    }
    if (fence <= st.last_fence) {
      violation(name + ": fence " + std::to_string(fence) + " granted after fence " + std::to_string(st.last_fence));
    }
    // A waiter granted out of q keeps its ticket, unless its process's
    // liveness had run out when it left q: then it queued again (a new
    // ticket, acquire.lua) and may be granted at once.
    auto qr = q_removed_.find(member);
    auto w = removed_w_.find(process_of(member));
    bool was_live = false;
    if (qr != q_removed_.end() && w != removed_w_.end()) {
      const auto left_ms = qr->second.ts / 1000;  // whole ms, floored on purpose
      was_live = w->second > static_cast<double>(left_ms);
    }
    if (was_live && qr->second.ticket != static_cast<double>(fence)) {
      violation(name + ": " + member + " granted fence " + std::to_string(fence) + " but its ticket was " +
                fmt(qr->second.ticket));
    }
  }
  st.last_fence = std::max(st.last_fence, fence);
  grants_.push_back(ServerGrant{name, member, fence, ts, epoch_});
}

// A holder this script removed from `from` with this fence, now re-created
// (in h and g out of o: inflate; in o out of an older version's record: the
// upgrade): a move, neither a removal nor a new grant. Recognised by member
// and fence: the deadline is carried as now + PTTL, which may differ from
// the replay's by a ms.
bool ServerLog::moved(const std::string& name, const std::string& member, const std::string& fence_text, From from) {
  auto it = std::find_if(h_removed_.begin(), h_removed_.end(), [&](const HRemoval& r) {
    return r.from == from && !r.fence.empty() && r.fence == fence_text && r.name == name && r.member == member;
  });
  if (it == h_removed_.end()) return false;
  moved_deadline_ = it->deadline;
  h_removed_.erase(it);
  granted_.insert({name, member});
  return true;
}

// The move into h (inflate) keeps the grant's deadline: h's score is
// now + PTTL o, below Redis's own deadline by at most the time the script
// has run (and the replay's is below Redis's: o_deadline). One further
// below, by more than 2 ms of slack, cut the grant short.
void ServerLog::check_move_deadline(std::int64_t ts, const std::string& name, const std::string& member,
                                    double h_deadline) {
  const std::int64_t ran_ms = (ts - script_ts_) / 1000;  // whole ms, floored on purpose
  const auto slack = static_cast<double>(ran_ms + 2);
  if (h_deadline < moved_deadline_ - slack) {
    violation(name + ": inline holder " + member + " moved into h with its deadline cut from " + fmt(moved_deadline_) +
              " to " + fmt(h_deadline) + " by " + kind_);
  }
}

// The inline holder leaves o (DEL, or a SET over it): judged as a removal
// from h, unless it turns out to be a move. One whose deadline passed here
// (o_expired) is never judged live; it is only recognised if it moves.
void ServerLog::inline_removed(std::int64_t ts, const std::string& name, NameState& st) {
  const auto& o = st.o ? st.o : st.o_expired;
  if (o) h_removed_.push_back(HRemoval{name, o->member, static_cast<double>(o->deadline_ms), ts, From::o, o->fence});
  st.o.reset();
  st.o_expired.reset();
}

// An older version's inline holder (the record's o, d, t; its fence is s)
// leaves the record: judged as a removal, unless it moves into o.
void ServerLog::record_holder_removed(std::int64_t ts, const std::string& name, const NameState& st) {
  auto o = st.rec.find("o");
  if (o == st.rec.end()) return;
  auto d = st.rec.find("d");
  auto s = st.rec.find("s");
  h_removed_.push_back(HRemoval{name, o->second, d == st.rec.end() ? 0 : score(d->second), ts, From::record,
                                s == st.rec.end() ? "" : s->second});
}

// At most `permits` holders: h's, the inline one and an older version's
// still in the record. The count is the record's (kept while the name has
// its queue structure), else the inline holder's own (o's value).
void ServerLog::check_permits(const std::string& name, const NameState& st, const std::string& after) {
  auto p = st.rec.find("p");
  const std::string text = p != st.rec.end() ? p->second : st.o ? st.o->permits : "";
  const std::size_t holders = st.h.size() + (st.o ? 1 : 0) + st.rec.count("o");
  std::uint64_t permits = 0;
  if (positive_integer(text, permits) && holders > permits) {
    violation(name + ": " + std::to_string(holders) + " holders for " + std::to_string(permits) + " permit(s) after " +
              after);
  }
}

// A process's entry leaves w only once it has expired (prune). Its waiters
// stay in q, and whichever later script removes them finds no entry in w
// and cannot judge them: a live process taken out of w is flagged here.
// (The move to version 4 removes per-waiter entries, "<m><cid>:<token>";
// a deadline beyond now + 2^31-1 ms is corrupt, which only tampering writes.)
void ServerLog::check_w_removal(std::int64_t ts, const std::string& name, const std::string& entry, double deadline) {
  if (entry.find(':') != std::string::npos) return;
  const auto ts_ms = ts / 1000;  // whole ms, floored on purpose
  const auto now = static_cast<double>(ts_ms);
  if (deadline > now && deadline <= now + 2147483647.0) {
    violation(name + ": live process " + entry + " (live until " + fmt(deadline) + ") removed from w by " + kind_ +
              " at " + std::to_string(ts / 1000));
  }
}

void ServerLog::finish_script() {
  if (!in_script_) return;
  for (auto& [name, after] : permit_checks_) {
    auto st = names_.find(name);
    if (st != names_.end() && !tainted_.count(name)) check_permits(name, st->second, after);
  }
  for (auto& [m, r] : q_removed_) {
    if (granted_.count({r.name, m}) || tainted_.count(r.name)) continue;
    if ((kind_ == "cancel" || kind_ == "evict") && own_.count(m)) continue;  // the owner leaves / the operator evicts
    if (dropped_by_floor(m, r.ticket)) continue;                             // its process no longer has it
    // Its process's deadline as it stood when the waiter left (or the
    // process left w first, in this script); none known: w had no entry.
    auto w = removed_w_.find(process_of(m));
    if (w == removed_w_.end()) continue;
    const auto ts_ms = r.ts / 1000;  // whole ms, floored on purpose
    if (w->second > static_cast<double>(ts_ms)) {
      violation(r.name + ": live waiter " + m + " (ticket " + fmt(r.ticket) + ", process " + w->first + " live until " +
                fmt(w->second) + ") removed from the queue without a grant by " + kind_ + " at " +
                std::to_string(r.ts / 1000));
    }
  }
  for (auto& r : h_removed_) {
    if (tainted_.count(r.name)) continue;
    if ((kind_ == "release" || kind_ == "evict") && own_.count(r.member)) continue;
    const auto ts_ms = r.ts / 1000;  // whole ms, floored on purpose
    if (r.deadline > static_cast<double>(ts_ms)) {
      const char* where = r.from == From::o ? " from o" : r.from == From::record ? " from the record" : "";
      violation(r.name + ": live holder " + r.member + " (deadline " + fmt(r.deadline) + ") removed" + where + " by " +
                kind_ + " at " + std::to_string(r.ts / 1000));
    }
  }
  for (auto& nm : new_holders_) {
    if (!granted_.count(nm) && !tainted_.count(nm.first)) {
      violation(nm.first + ": " + nm.second + " entered h without a fence");
    }
  }
  drop_script();
}

void ServerLog::drop_script() {
  in_script_ = false;
  kind_.clear();
  own_.clear();
  removed_w_.clear();
  q_removed_.clear();
  h_removed_.clear();
  granted_.clear();
  new_holders_.clear();
  permit_checks_.clear();
}

}  // namespace fairlock::faults
