// The history checker's rules over the user's view (history.h): belief
// intervals, fence order, takeovers reported as losses, async callbacks.
#include <algorithm>
#include <map>
#include <set>

#include "history.h"

namespace fairlock::faults {

namespace {

std::string span(const GrantRec& g) {
  return g.gid + "(fence " + std::to_string(g.fence) + ", " + std::to_string(g.b_start) + ".." +
         std::to_string(g.b_end) + ")";
}

// The test SIGSTOPped `wid` at some time in [from, to).
bool paused_in(const History& h, const std::string& wid, Micros from, Micros to) {
  return std::any_of(h.pauses.begin(), h.pauses.end(),
                     [&](const PauseRec& p) { return p.wid == wid && p.from < to && p.from >= from; });
}

// `holders` believe at once at `at` (the latest belief began then). Within
// permits, or explained by pauses of the earlier holders, or a violation.
void judge(const std::string& name, const std::vector<const GrantRec*>& holders, const GrantRec* latest,
           std::uint32_t permits, const History& h, CheckResult& res, const Bad& bad) {
  res.max_concurrent = std::max(res.max_concurrent, holders.size());
  if (holders.size() <= permits) return;
  std::size_t explained = 0;
  std::string who;
  for (const auto* g : holders) {
    who += " " + span(*g);
    if (g != latest && paused_in(h, g->wid, g->b_start, latest->b_start)) ++explained;
  }
  if (holders.size() - explained <= permits) {
    ++res.paused_overlaps;
    return;
  }
  ++res.overlaps;
  bad(name + ": " + std::to_string(holders.size()) + " holders believed valid at once for " + std::to_string(permits) +
      " permit(s):" + who);
}

void check_fences(const std::string& name, const std::vector<const GrantRec*>& gs, const Bad& bad) {
  std::map<std::uint64_t, const GrantRec*> by_fence;
  for (const auto* g : gs) {
    auto [it, fresh] = by_fence.emplace(g->fence, g);
    if (!fresh) {
      bad(name + ": fence " + std::to_string(g->fence) + " was granted twice: " + it->second->gid + " and " + g->gid);
    }
    if (g->fence == 0 || g->fence >= (1ULL << 53)) {
      bad(name + ": garbage fence " + std::to_string(g->fence) + " in " + g->gid);
    }
  }
  // A lock's beliefs follow one another, so their fences rise in start order.
  if (gs.front()->permits != 1) return;
  std::vector<const GrantRec*> believed;
  for (const auto* g : gs) {
    if (g->b_end >= 0) believed.push_back(g);
  }
  std::sort(believed.begin(), believed.end(),
            [](const GrantRec* a, const GrantRec* b) { return a->b_start < b->b_start; });
  for (size_t i = 1; i < believed.size(); ++i) {
    if (believed[i]->fence <= believed[i - 1]->fence) {
      bad(name + ": fence " + std::to_string(believed[i]->fence) + " (" + believed[i]->gid + ") began after fence " +
          std::to_string(believed[i - 1]->fence) + " (" + believed[i - 1]->gid + ")");
    }
  }
}

}  // namespace

void check_beliefs(const std::string& name, const std::vector<const GrantRec*>& gs, const History& h, CheckResult& res,
                   const Bad& bad) {
  check_fences(name, gs, bad);
  const std::uint32_t permits = gs.front()->permits;
  std::vector<const GrantRec*> believed;
  for (const auto* g : gs) {
    if (g->b_end < 0) continue;
    if (g->permits != permits) bad(name + ": grants with different permits");
    believed.push_back(g);
  }
  // A sweep in start order: at the instant each belief began, every belief
  // begun before (or at once, earlier in the order) and not yet ended holds
  // with it. A belief of one instant (b_end == b_start) holds only then; one
  // that ended at an instant does not overlap one that began then.
  std::sort(believed.begin(), believed.end(), [](const GrantRec* a, const GrantRec* b) {
    return a->b_start != b->b_start ? a->b_start < b->b_start : a->gid < b->gid;
  });
  std::multimap<Micros, const GrantRec*> open;  // by b_end
  for (const auto* g : believed) {
    open.erase(open.begin(), open.upper_bound(g->b_start));
    std::vector<const GrantRec*> holders = {g};
    for (const auto& [end, o] : open) holders.push_back(o);
    judge(name, holders, g, permits, h, res, bad);
    if (g->b_end > g->b_start) open.emplace(g->b_end, g);
  }
}

void check_takeovers(const History& h, const CheckConfig& cfg, CheckResult& res, const Bad& bad) {
  // (name, epoch) -> (fence, the TIME by which it had been granted), from the
  // clients' returns and the server's log.
  std::map<std::pair<std::string, int>, std::vector<std::pair<std::uint64_t, Micros>>> granted;
  for (const auto& g : h.grants) {
    if (!g.ambiguous) granted[{g.name, g.epoch}].emplace_back(g.fence, g.start);
  }
  if (cfg.log) {
    for (const auto& sg : cfg.log->grants()) granted[{sg.name, sg.epoch}].emplace_back(sg.fence, sg.ts_us);
  }
  for (const auto& g : h.grants) {
    if (g.permits != 1 || g.ambiguous || g.end < 0 || g.unlock_result.empty()) continue;
    const auto& all = granted[{g.name, g.epoch}];
    auto first = std::find_if(all.begin(), all.end(), [&](const std::pair<std::uint64_t, Micros>& o) {
      return o.first > g.fence && o.second + cfg.takeover_margin_us < g.end;
    });
    if (first == all.end()) continue;
    ++res.taken_over;
    if (g.unlock_result == "lost" || g.lost_cb >= 0) {
      ++res.taken_over_reported;
    } else if (g.unlock_result == "conn" || g.unlock_result == "timeouterr") {
      ++res.outcomes["loss-unknowable"];
    } else {
      bad("grant " + g.gid + " of " + g.name + " fence " + std::to_string(g.fence) + " was taken over (fence " +
          std::to_string(first->first) + " granted by " + std::to_string(first->second) +
          ", before its release began at " + std::to_string(g.end) +
          ") and never reported lost (unlock: " + g.unlock_result + ", on_lost not called)");
    }
  }
}

void check_callbacks(const History& h, const CheckConfig& cfg, CheckResult& res, const Bad& bad) {
  for (const auto& [id, w] : h.waits) {
    const bool killed = cfg.killed.count(w.wid) > 0;
    res.callbacks += w.calls.size();
    if (w.m_call < 0) {
      if (!killed) bad("async wait " + id + ": a callback ran for a wait that was never accepted");
      continue;
    }
    ++res.waits;
    if (w.calls.size() > 1) {
      std::string what;
      for (const auto& c : w.calls) what += " " + c.first;
      bad("async wait " + id + " (" + w.op + " on " + w.name + ") was called back " + std::to_string(w.calls.size()) +
          " times:" + what);
    }
    if (w.calls.empty()) {
      if (!killed) bad("async wait " + id + " (" + w.op + " on " + w.name + ") was never called back");
      continue;
    }
    if (w.timeout_ms < 0) continue;
    const Micros took = w.calls.front().second - w.m_call;
    const double over = static_cast<double>(took) / 1000.0 - static_cast<double>(w.timeout_ms);
    note_overshoot(
        h, {w.wid, w.op, w.name, w.calls.front().first, "", w.timeout_ms, over, w.m_call, w.calls.front().second},
        res.max_callback_overshoot_ms, res.max_callback_overshoot_unpaused_ms, res);
    if (took > w.timeout_ms * 1000 + cfg.deadline_slack_us) {
      bad("async wait " + id + " (" + w.op + " " + std::to_string(w.timeout_ms) + " ms on " + w.name +
          ") was called back after " + std::to_string(took / 1000) + " ms (" + w.calls.front().first + ")");
    }
  }
}

}  // namespace fairlock::faults
