#include "history.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>

namespace fairlock::faults {

namespace {
Micros num(const std::string& s) { return std::atoll(s.c_str()); }

const char* kStatNames[] = {"grants",      "waits",           "timeouts",       "cancels",
                            "lost",        "reconnects",      "script_reloads", "wakes_signal",
                            "wakes_timer", "wakes_heartbeat", "wakes_keyspace", "heartbeats"};

// A, C and P records.
void load_async_or_pause(History& h, const std::vector<std::string>& f) {
  const std::string& t = f[0];
  if (t == "A" && f.size() >= 7) {
    WaitRec& w = h.waits[f[1]];
    w.id = f[1];
    w.wid = f[2];
    w.name = f[3];
    w.op = f[4];
    w.m_call = num(f[5]);
    w.timeout_ms = std::atol(f[6].c_str());
  } else if (t == "C" && f.size() >= 4) {
    WaitRec& w = h.waits[f[1]];
    w.id = f[1];
    if (w.wid.empty()) w.wid = f[1].substr(0, f[1].rfind(".a", f[1].rfind('.') - 1));
    w.calls.emplace_back(f[2], num(f[3]));
  } else if (t == "P" && f.size() >= 4) {
    h.pauses.push_back({f[1], num(f[2]), num(f[3])});
  }
}

// The belief interval: on CLOCK_MONOTONIC when recorded, else the validity interval.
void set_belief(GrantRec& g) {
  if (g.m_start < 0) {
    g.b_start = g.start;
    g.b_end = g.valid_end;
    return;
  }
  g.b_start = g.m_start;
  g.b_end = -1;
  if (!g.m_owned) return;
  g.b_end = (g.end >= 0 && g.owned_end && g.m_end >= 0) ? g.m_end : std::max(g.m_start, g.m_last);
}

std::string cid_of(const std::string& member) {
  auto colon = member.find(':');
  if (member.size() < 2 || colon == std::string::npos) return "";
  return member.substr(1, colon - 1);
}
}  // namespace

std::uint64_t WorkerRec::stat(const char* which) const {
  for (size_t i = 0; i < sizeof kStatNames / sizeof *kStatNames; ++i) {
    if (std::string(kStatNames[i]) == which) return i < stats.size() ? stats[i] : 0;
  }
  return 0;
}

std::uint64_t History::total(const char* stat) const {
  std::uint64_t sum = 0;
  for (auto& [wid, w] : workers) sum += w.stat(stat);
  return sum;
}

History History::load(Rec& rec, const std::string& ev) {
  History h;
  std::map<std::string, size_t> by_gid;
  for (const auto& line : rec.lrange(ev)) {
    auto f = split(line);
    if (f.empty()) continue;
    const std::string& t = f[0];
    if (t == "S" && f.size() >= 5) {
      WorkerRec& w = h.workers[f[1]];
      w.wid = f[1];
      w.pid = std::atol(f[2].c_str());
      w.cid = f[3];
      w.t_start = num(f[4]);
    } else if (t == "G" && f.size() >= 11) {
      GrantRec g;
      g.gid = f[1];
      g.wid = f[2];
      g.name = f[3];
      g.permits = static_cast<std::uint32_t>(std::atol(f[4].c_str()));
      g.fence = std::strtoull(f[5].c_str(), nullptr, 10);
      g.t_call = num(f[6]);
      g.start = num(f[7]);
      g.lease_ms = std::atol(f[8].c_str());
      g.owned_start = f[9] == "1";
      g.op = f[10];
      if (f.size() >= 13) {
        g.m_start = num(f[11]);
        g.m_owned = f[12] == "1";
      }
      g.shared = f.size() >= 14 && f[13] == "1";
      by_gid[g.gid] = h.grants.size();
      h.grants.push_back(g);
    } else if (t == "E" && f.size() >= 4) {
      auto it = by_gid.find(f[1]);
      if (it == by_gid.end()) continue;
      h.grants[it->second].end = num(f[2]);
      h.grants[it->second].owned_end = f[3] == "1";
      if (f.size() >= 5) h.grants[it->second].m_end = num(f[4]);
    } else if (t == "U" && f.size() >= 4) {
      auto it = by_gid.find(f[1]);
      if (it == by_gid.end()) continue;
      h.grants[it->second].unlock_result = f[2];
      h.grants[it->second].unlock_t = num(f[3]);
    } else if (t == "L" && f.size() >= 3) {
      auto it = by_gid.find(f[1]);
      if (it == by_gid.end()) continue;
      if (h.grants[it->second].lost_cb < 0) h.grants[it->second].lost_cb = num(f[2]);
    } else if (t == "R" && f.size() >= 9) {
      ReturnRec r;
      r.wid = f[1];
      r.op = f[2];
      r.name = f[3];
      r.permits = static_cast<std::uint32_t>(std::atol(f[4].c_str()));
      r.t_call = num(f[5]);
      r.t_ret = num(f[6]);
      r.timeout_ms = std::atol(f[7].c_str());
      r.outcome = f[8];
      r.msg = f.size() > 9 ? f[9] : "";
      if (f.size() >= 12) {
        r.m_call = num(f[10]);
        r.m_ret = num(f[11]);
      }
      h.returns.push_back(r);
    } else if (t == "D" && f.size() >= 3) {
      WorkerRec& w = h.workers[f[1]];
      w.wid = f[1];
      w.t_done = num(f[2]);
      for (size_t i = 3; i < f.size(); ++i) w.stats.push_back(std::strtoull(f[i].c_str(), nullptr, 10));
    } else if (t == "X") {
      h.unexpected.push_back(line);
    } else {
      load_async_or_pause(h, f);
    }
  }
  for (const auto& [gid, t] : rec.hgetall(ev + ":valid")) {
    auto it = by_gid.find(gid);
    if (it == by_gid.end()) continue;
    auto tm = split(t);  // "t m" (older workers: "t")
    h.grants[it->second].last_valid = num(tm[0]);
    if (tm.size() > 1) h.grants[it->second].m_last = num(tm[1]);
  }
  return h;
}

std::string CheckResult::summary() const {
  std::ostringstream o;
  o << grants << " grants (" << valid << " with a validity interval, " << linked << " linked to the server's grant, "
    << ambiguous << " across a data loss), " << returns << " calls without a grant, " << timed_calls
    << " timed calls, max concurrent holders " << max_concurrent << ", worst deadline overshoot "
    << static_cast<long>(max_overshoot_ms) << " ms; " << overlaps << " belief overlaps (" << paused_overlaps
    << " explained by a test pause); " << taken_over << " lock grants taken over while held (" << taken_over_reported
    << " reported lost); " << waits << " async waits, " << callbacks << " callback runs, worst callback "
    << static_cast<long>(max_callback_overshoot_ms) << " ms after its deadline";
  if (!outcomes.empty()) {
    o << "; outcomes:";
    for (auto& [k, v] : outcomes) o << " " << k << "=" << v;
  }
  return o.str();
}

Micros paused_within(const History& h, const std::string& wid, Micros from, Micros to) {
  Micros total = 0;
  for (const auto& p : h.pauses) {
    if (p.wid != wid) continue;
    const Micros end = p.to < 0 ? to : std::min(p.to, to);
    total += std::max<Micros>(0, end - std::max(p.from, from));
  }
  return total;
}

void note_overshoot(const History& h, Overshoot o, double& worst, double& worst_unpaused, CheckResult& res) {
  o.paused_us = paused_within(h, o.wid, o.m_call, o.m_ret);
  worst = std::max(worst, o.over_ms);
  if (o.paused_us == 0) worst_unpaused = std::max(worst_unpaused, o.over_ms);
  if (std::max(o.over_ms, o.rec_over_ms) > 300) res.overshoots.push_back(o);
}

CheckResult check(History& h, const CheckConfig& cfg) {
  CheckResult res;
  auto bad = [&](const std::string& s) {
    if (res.violations.size() < 100) res.violations.push_back(s);
  };
  std::vector<LossWindow> losses;
  if (cfg.log) losses = cfg.log->losses();

  // Server grants by (name, fence) for linking.
  std::multimap<std::pair<std::string, std::uint64_t>, const ServerGrant*> server;
  if (cfg.log) {
    for (const auto& sg : cfg.log->grants()) server.emplace(std::make_pair(sg.name, sg.fence), &sg);
  }

  for (auto& x : h.unexpected) bad("unexpected exception type in a worker: " + x);

  for (auto& g : h.grants) {
    ++res.grants;
    const WorkerRec* w = h.workers.count(g.wid) ? &h.workers.at(g.wid) : nullptr;
    // Validity interval.
    if (g.owned_start) {
      g.valid_end = (g.end >= 0 && g.owned_end) ? g.end : std::max(g.start, g.last_valid);
      ++res.valid;
    }
    set_belief(g);
    // Epoch: from the server's grant if linked, else from the loss windows.
    g.epoch = 0;
    for (const auto& l : losses) {
      if (l.to_us <= g.t_call) ++g.epoch;
      else if (l.from_us < g.start) g.ambiguous = true;  // the loss happened while this call ran
    }
    if (cfg.log && w) {
      auto range = server.equal_range({g.name, g.fence});
      const ServerGrant* best = nullptr;
      for (auto it = range.first; it != range.second; ++it) {
        if (cid_of(it->second->member) == w->cid && (!best || it->second->ts_us <= g.start)) best = it->second;
      }
      if (best) {
        g.linked = true;
        g.epoch = best->epoch;
        g.ambiguous = false;
        ++res.linked;
      } else if (!g.ambiguous && !cfg.log->tainted().count(g.name) &&
                 std::none_of(cfg.log->gaps().begin(), cfg.log->gaps().end(),
                              [&](const LossWindow& gap) { return gap.from_us < g.start && gap.to_us > g.t_call; })) {
        bad("grant " + g.gid + " of " + g.name + " fence " + std::to_string(g.fence) +
            " has no matching grant by the server to this process (cid " + w->cid + ")");
      }
    }
    if (g.ambiguous) ++res.ambiguous;
    // A grant still believed valid once the data was gone (after a FLUSHALL,
    // or once the restarted empty server was up: only then could anyone
    // else be granted) must have been reported lost. An unlock that failed
    // in transit cannot know, and a killed process cannot say.
    if (g.valid_end >= 0 && !g.ambiguous) {
      for (auto i = static_cast<size_t>(g.epoch); i < losses.size(); ++i) {
        if (losses[i].to_us < g.valid_end) {
          bool reported =
              g.unlock_result == "lost" || g.lost_cb >= 0 || (g.end >= 0 && !g.owned_end) || cfg.killed.count(g.wid);
          bool unknowable = g.unlock_result == "conn" || g.unlock_result == "timeouterr";
          if (!reported && unknowable) ++res.outcomes["loss-unknowable"];
          if (!reported && !unknowable) {
            bad("grant " + g.gid + " of " + g.name + " fence " + std::to_string(g.fence) + " was valid across a " +
                losses[i].why + " and never reported lost (unlock: " + g.unlock_result + ")");
          }
          break;
        }
      }
    }
    // Unlock results.
    if (!g.unlock_result.empty()) {
      ++res.outcomes["unlock:" + g.unlock_result];
      if (!cfg.allowed_unlock.count(g.unlock_result)) {
        bad("unlock of " + g.gid + " (" + g.name + ", " + g.op + (g.shared ? " on a shared object" : "") +
            ") ended with '" + g.unlock_result + "'");
      }
    } else if (!cfg.killed.count(g.wid)) {
      bad("grant " + g.gid + " of " + g.name + " was never unlocked by a worker that was not killed");
    }
    if (g.op.rfind("phantom:", 0) == 0) {
      bad("grant " + g.gid + " of " + g.name + " fence " + std::to_string(g.fence) + ": " + g.op.substr(8) +
          " reported no grant, yet owns_lock() said held after it");
    }
    // Deadline of timed calls that got the grant.
    if (g.op == "for") ++res.timed_calls;
  }

  // Calls without a grant; recorder TIME is CLOCK_REALTIME of this host.
  const Micros mono_offset = realtime_us() - mono_us();
  for (auto& r : h.returns) {
    ++res.returns;
    ++res.outcomes[r.op + ":" + r.outcome];
    if (!cfg.allowed_outcomes.count(r.outcome)) {
      bad(r.wid + " " + r.op + " " + r.name + " ended with '" + r.outcome + "': " + r.msg);
    }
    if (r.op == "for" && r.timeout_ms >= 0) {
      ++res.timed_calls;
      // Measured around the call itself when recorded (not the recorder's round trips).
      const bool mono = r.m_call >= 0 && r.m_ret >= r.m_call;
      const Micros from = mono ? r.m_call : r.t_call - mono_offset, to = mono ? r.m_ret : r.t_ret - mono_offset;
      const double over = static_cast<double>(to - from) / 1000.0 - static_cast<double>(r.timeout_ms);
      const double rec_over = static_cast<double>(r.t_ret - r.t_call) / 1000.0 - static_cast<double>(r.timeout_ms);
      note_overshoot(h, {r.wid, r.op, r.name, r.outcome, r.msg, r.timeout_ms, over, from, to, 0, rec_over},
                     res.max_overshoot_ms, res.max_overshoot_unpaused_ms, res);
      if (r.t_ret - r.t_call > r.timeout_ms * 1000 + cfg.deadline_slack_us) {
        bad(r.wid + " try_lock_for(" + std::to_string(r.timeout_ms) + " ms) on " + r.name + " returned after " +
            std::to_string((r.t_ret - r.t_call) / 1000) + " ms (" + r.outcome + ")");
      }
    }
  }

  // Per (name, epoch): mutual exclusion, unique fences, lock fences in start order.
  std::map<std::pair<std::string, int>, std::vector<const GrantRec*>> groups;
  for (auto& g : h.grants) {
    if (!g.ambiguous) groups[{g.name, g.epoch}].push_back(&g);
  }
  for (auto& [key, gs] : groups) check_beliefs(key.first, gs, h, res, bad);
  check_takeovers(h, cfg, res, bad);
  check_callbacks(h, cfg, res, bad);
  return res;
}

}  // namespace fairlock::faults
