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
      by_gid[g.gid] = h.grants.size();
      h.grants.push_back(g);
    } else if (t == "E" && f.size() >= 4) {
      auto it = by_gid.find(f[1]);
      if (it == by_gid.end()) continue;
      h.grants[it->second].end = num(f[2]);
      h.grants[it->second].owned_end = f[3] == "1";
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
      h.returns.push_back(r);
    } else if (t == "D" && f.size() >= 3) {
      WorkerRec& w = h.workers[f[1]];
      w.wid = f[1];
      w.t_done = num(f[2]);
      for (size_t i = 3; i < f.size(); ++i) w.stats.push_back(std::strtoull(f[i].c_str(), nullptr, 10));
    } else if (t == "X") {
      h.unexpected.push_back(line);
    }
  }
  for (const auto& [gid, t] : rec.hgetall(ev + ":valid")) {
    auto it = by_gid.find(gid);
    if (it != by_gid.end()) h.grants[it->second].last_valid = num(t);
  }
  return h;
}

std::string CheckResult::summary() const {
  std::ostringstream o;
  o << grants << " grants (" << valid << " with a validity interval, " << linked << " linked to the server's grant, "
    << ambiguous << " across a data loss), " << returns << " calls without a grant, " << timed_calls
    << " timed calls, max concurrent holders " << max_concurrent << ", worst deadline overshoot "
    << static_cast<long>(max_overshoot_ms) << " ms";
  if (!outcomes.empty()) {
    o << "; outcomes:";
    for (auto& [k, v] : outcomes) o << " " << k << "=" << v;
  }
  return o.str();
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
        bad("unlock of " + g.gid + " (" + g.name + ") ended with '" + g.unlock_result + "'");
      }
    } else if (!cfg.killed.count(g.wid)) {
      bad("grant " + g.gid + " of " + g.name + " was never unlocked by a worker that was not killed");
    }
    // Deadline of timed calls that got the grant.
    if (g.op == "for") ++res.timed_calls;
  }

  // Calls without a grant.
  for (auto& r : h.returns) {
    ++res.returns;
    ++res.outcomes[r.op + ":" + r.outcome];
    if (!cfg.allowed_outcomes.count(r.outcome)) {
      bad(r.wid + " " + r.op + " " + r.name + " ended with '" + r.outcome + "': " + r.msg);
    }
    if (r.op == "for" && r.timeout_ms >= 0) {
      ++res.timed_calls;
      double over = static_cast<double>(r.t_ret - r.t_call) / 1000.0 - static_cast<double>(r.timeout_ms);
      res.max_overshoot_ms = std::max(res.max_overshoot_ms, over);
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
  for (auto& [key, gs] : groups) {
    const std::string& name = key.first;
    std::map<std::uint64_t, const GrantRec*> by_fence;
    for (auto* g : gs) {
      auto [it, fresh] = by_fence.emplace(g->fence, g);
      if (!fresh) {
        bad(name + ": fence " + std::to_string(g->fence) + " was granted twice: " + it->second->gid + " and " + g->gid);
      }
      if (g->fence == 0 || g->fence >= (1ULL << 53))
        bad(name + ": garbage fence " + std::to_string(g->fence) + " in " + g->gid);
    }
    // Sweep over validity intervals.
    struct Ev {
      Micros t;
      int delta;
      const GrantRec* g;
    };
    std::vector<Ev> evs;
    std::uint32_t permits = gs.front()->permits;
    std::vector<const GrantRec*> points;  // believed valid at one instant only
    for (auto* g : gs) {
      if (g->valid_end < 0) continue;
      if (g->permits != permits) bad(name + ": grants with different permits");
      if (g->valid_end <= g->start) {
        points.push_back(g);
        continue;
      }
      evs.push_back({g->start, +1, g});
      evs.push_back({g->valid_end, -1, g});
    }
    for (auto* p : points) {
      std::size_t holders = 1;
      std::string who = " " + p->gid;
      for (auto* g : gs) {
        if (g != p && g->valid_end > g->start && g->start < p->start && p->start < g->valid_end) {
          ++holders;
          who += " " + g->gid;
        }
      }
      res.max_concurrent = std::max(res.max_concurrent, holders);
      if (holders > permits) {
        bad(name + ": " + std::to_string(holders) + " holders believed valid at once for " + std::to_string(permits) +
            " permit(s):" + who);
      }
    }
    std::sort(evs.begin(), evs.end(), [](const Ev& a, const Ev& b) {
      if (a.t != b.t) return a.t < b.t;
      return a.delta < b.delta;  // an end at the same instant comes first
    });
    std::set<const GrantRec*> active;
    for (auto& e : evs) {
      if (e.delta < 0) {
        active.erase(e.g);
        continue;
      }
      active.insert(e.g);
      res.max_concurrent = std::max(res.max_concurrent, active.size());
      if (active.size() > permits) {
        std::string who;
        for (auto* a : active) {
          who += " " + a->gid + "(fence " + std::to_string(a->fence) + ", " + std::to_string(a->start) + ".." +
                 std::to_string(a->valid_end) + ")";
        }
        bad(name + ": " + std::to_string(active.size()) + " holders believed valid at once for " +
            std::to_string(permits) + " permit(s):" + who);
      }
    }
    // A lock's valid grants follow one another, so their fences rise in start order.
    if (permits == 1) {
      std::vector<const GrantRec*> valid;
      for (auto* g : gs) {
        if (g->valid_end >= 0) valid.push_back(g);
      }
      std::sort(valid.begin(), valid.end(), [](const GrantRec* a, const GrantRec* b) { return a->start < b->start; });
      for (size_t i = 1; i < valid.size(); ++i) {
        if (valid[i]->fence <= valid[i - 1]->fence) {
          bad(name + ": fence " + std::to_string(valid[i]->fence) + " (" + valid[i]->gid + ") began after fence " +
              std::to_string(valid[i - 1]->fence) + " (" + valid[i - 1]->gid + ")");
        }
      }
    }
  }
  return res;
}

}  // namespace fairlock::faults
