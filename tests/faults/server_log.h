#pragma once
// ServerLog: a MONITOR connection to the lock server that replays, command by
// command, what the Lua scripts do to each name's q, w, h, g, seq (its
// record) and o (its uncontended holder, kept inline: protocol version 5),
// and checks the protocol's invariants on the server's own execution order:
//   - a grant (HSET g member fence, or an inline grant: SET o "<member>
//     <fence> <permits> <granted ms>" PX lease) goes to the lowest ticket: no
//     waiter with a smaller ticket is still queued at that moment (FIFO, no
//     barging);
//   - fences of successive grants of a name strictly increase (per epoch);
//   - at most `permits` holders: the entries in h and the inline holder;
//   - a waiter is removed from q without being granted only by its own
//     cancel (or an evict) or once the liveness deadline of its process has
//     passed (w: process -> deadline, protocol version 4; a live waiter is
//     never skipped), and a process leaves w only once its deadline has
//     passed (its waiters stay in q: a later script could not judge them); a
//     holder (in h, or inline in o) is removed only by its own release (or
//     an evict) or once its deadline has passed (a grant never moves on
//     early); moving the inline holder into h and g with its fence (inflate),
//     or an older version's out of the record into o (the upgrade), is
//     neither a removal nor a new grant;
//   - the idle cleanup (DEL g w) runs only when q and h are empty.
// Redis deletes o when its PX runs out, with no command MONITOR could show:
// the replay drops it at its deadline (see o_deadline in server_log.cpp).
// Every grant is kept (name, member, fence, time, epoch) so the client-side
// history can be linked to it. FLUSHALL/FLUSHDB and a server restart that
// lost data start a new epoch (fences restart). After a reconnect (server
// killed/restarted) the state is re-read with a snapshot script whose own
// MONITOR line marks the exact point where the replay resumes.
#include <hiredis/hiredis.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

namespace fairlock::faults {

struct ServerGrant {
  std::string name, member;
  std::uint64_t fence = 0;
  std::int64_t ts_us = 0;
  int epoch = 0;
};

struct LossWindow {  // fences restart after this (FLUSHALL, restart without data)
  std::int64_t from_us = 0, to_us = 0;
  std::string why;
};

class ServerLog {
 public:
  // port > 0: connect and follow the server. port == 0: offline, for
  // feeding recorded lines to the replay (the checker's own tests).
  explicit ServerLog(int port, std::string prefix = "fairlock");
  void feed(const std::string& monitor_line) { handle_line(monitor_line); }
  void flush() { finish_script(); }
  ~ServerLog();
  ServerLog(const ServerLog&) = delete;
  ServerLog& operator=(const ServerLog&) = delete;

  // Waits until everything the server executed so far has been replayed
  // (a marker command round trip), then stops. Returns false if the marker
  // was not seen in time (the log is then incomplete and the caller fails).
  bool stop();

  // Valid after stop().
  const std::vector<ServerGrant>& grants() const { return grants_; }
  const std::vector<std::string>& violations() const { return violations_; }
  const std::vector<LossWindow>& losses() const { return losses_; }
  // Windows in which the MONITOR connection was down (server killed), from
  // the last line seen: what the server did then is not in the log.
  const std::vector<LossWindow>& gaps() const { return gaps_; }
  std::size_t lines() const { return lines_; }
  std::size_t scripts() const { return scripts_; }
  int resyncs() const { return resyncs_; }
  // Names whose keys were written by a non-script command (not checked).
  const std::set<std::string>& tainted() const { return tainted_; }

 private:
  // The inline holder: o = "<member> <fence> <permits> <granted ms>".
  struct Inline {
    std::string member, fence, permits;
    std::int64_t deadline_ms = 0;  // Redis holds o at least until then (o_deadline)
  };
  struct NameState {
    std::map<std::string, double> q, w, h;  // w as the server keeps it: process -> deadline (version 4)
    std::map<std::string, std::string> g;
    // seq, the record: v, s, p, x; and an older version's inline holder
    // (o, d, t: versions 2 to 4) until the upgrade moves it into o.
    std::map<std::string, std::string> rec;
    std::optional<Inline> o;  // while its deadline has not passed
    // The last o whose deadline passed (expire): Redis may still have held
    // it for a ms, so a script may yet renew it or move it into h.
    std::optional<Inline> o_expired;
    std::uint64_t last_fence = 0;
    std::map<std::string, std::int64_t> expire_at;  // suffix -> us (PEXPIRE by the scripts)
  };
  // Drops the structures of `name` whose TTL ran out before `ts`, and its
  // inline holder once its deadline has passed (Redis expires keys without
  // any command MONITOR could show).
  void expire(const std::string& name, std::int64_t ts);
  void run();
  bool connect_and_resync();
  void handle_line(const std::string& line);
  void apply_snapshot(const redisReply& r, std::int64_t ts);
  void lua(std::int64_t ts, const std::vector<std::string>& argv);
  void client_cmd(std::int64_t ts, const std::vector<std::string>& argv);
  void heartbeat_args(const std::vector<std::string>& argv, std::size_t from);
  bool dropped_by_floor(const std::string& member, double ticket) const;
  void record_cmd(std::int64_t ts, const std::string& cmd, const std::vector<std::string>& argv,
                  const std::string& name, NameState& st);
  void inline_cmd(std::int64_t ts, const std::string& cmd, const std::vector<std::string>& argv,
                  const std::string& name, NameState& st);
  void inline_set(std::int64_t ts, const std::vector<std::string>& argv, const std::string& name, NameState& st);
  void grant(std::int64_t ts, const std::string& name, NameState& st, const std::string& member,
             const std::string& fence_text);
  // Where a removed holder was kept.
  enum class From { h, o, record };
  bool moved(const std::string& name, const std::string& member, const std::string& fence_text, From from);
  void check_move_deadline(std::int64_t ts, const std::string& name, const std::string& member, double h_deadline);
  void inline_removed(std::int64_t ts, const std::string& name, NameState& st);
  void record_holder_removed(std::int64_t ts, const std::string& name, const NameState& st);
  void check_permits(const std::string& name, const NameState& st, const std::string& after);
  // Takes q's member `m` out as a ZREM or ZPOPMIN of the script does,
  // noting its process's liveness deadline.
  void remove_waiter(std::int64_t ts, const std::string& name, NameState& st, const std::string& m);
  void finish_script();  // checks the script just replayed, then forgets it
  void drop_script();    // forgets it unchecked
  bool split_key(const std::string& key, std::string& name, std::string& suffix) const;
  void violation(const std::string& what);
  void check_w_removal(std::int64_t ts, const std::string& name, const std::string& entry, double deadline);

  int port_;
  std::string prefix_;
  std::string sentinel_;
  bool synced_once_ = false;
  std::map<std::string, std::string> script_kind_;  // SHA1 or function name -> script name
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::string marker_;       // resync marker currently awaited ("" = in sync)
  std::string stop_marker_;  // set by stop(), then stop_marker_set_
  std::atomic<bool> stop_marker_set_{false};
  std::atomic<bool> stop_seen_{false};
  redisContext* mon_ = nullptr;
  redisReply* pending_snapshot_ = nullptr;
  std::int64_t down_since_ = 0;  // the log is incomplete from then on
  std::int64_t last_ts_ = 0;     // the server's time of the last line seen

  std::map<std::string, NameState> names_;
  std::vector<ServerGrant> grants_;
  std::vector<std::string> violations_;
  std::vector<LossWindow> losses_;
  std::vector<LossWindow> gaps_;
  std::set<std::string> tainted_;
  int epoch_ = 0;
  std::size_t lines_ = 0, scripts_ = 0;
  int resyncs_ = 0;

  // Current script execution.
  bool in_script_ = false;
  std::int64_t script_ts_ = 0;  // its EVALSHA line's time: stamped before it runs
  double moved_deadline_ = 0;   // the deadline of the holder moved() last recognised
  std::string kind_;
  std::set<std::string> own_;
  double floor_ = 0;           // a heartbeat's floor (0: none)
  std::string floor_process_;  // the process whose members that heartbeat sends
  // w entry (a process) -> its deadline when this script first removed it
  // or one of its waiters: a waiter's liveness as it stood when it left q.
  std::map<std::string, double> removed_w_;
  struct QRemoval {
    std::string name;
    std::int64_t ts = 0;
    double ticket = 0;
  };
  std::map<std::string, QRemoval> q_removed_;
  struct HRemoval {
    std::string name, member;
    double deadline = 0;
    std::int64_t ts = 0;
    From from = From::h;
    std::string fence;  // an inline holder's (o's, or an older record's s): it may be moving (moved)
  };
  std::vector<HRemoval> h_removed_;
  std::set<std::pair<std::string, std::string>> granted_;  // (name, member)
  std::set<std::pair<std::string, std::string>> new_holders_;
  // Names this script added a holder to (-> what added it): their permits
  // are checked when it ends (a release hands its permit on before it
  // leaves h).
  std::map<std::string, std::string> permit_checks_;
};

// Parses one MONITOR line into (timestamp us, from_lua, argv). False if malformed.
bool parse_monitor_line(const std::string& line, std::int64_t& ts, bool& from_lua, std::vector<std::string>& argv);

}  // namespace fairlock::faults
