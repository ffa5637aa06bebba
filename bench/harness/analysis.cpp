#include "analysis.h"

#include <algorithm>
#include <limits>

#include "common.h"

namespace fbench {

Metrics analyse(const std::vector<Rec>& recs, std::int64_t go, std::int64_t stop, int permits, std::int64_t tol_ns,
                bool has_fences, bool order_by_fence) {
  constexpr std::int64_t kInf = std::numeric_limits<std::int64_t>::max();
  Metrics m;
  m.window_s = static_cast<double>(stop - go) / 1e9;

  std::vector<const Rec*> g;  // granted inside the window, in grant order
  for (const auto& r : recs) {
    if (r.grant >= go && r.grant <= stop) g.push_back(&r);
  }
  std::sort(g.begin(), g.end(), [](const Rec* a, const Rec* b) { return a->grant < b->grant; });
  m.grants = static_cast<long long>(g.size());
  m.grants_per_s = m.window_s > 0 ? static_cast<double>(m.grants) / m.window_s : 0;

  // Every request that started before stop, keyed by when it was granted
  // (never, within the window: +inf), with the suffix minimum of its start.
  // With order_by_fence the key is the fence of any request granted at all
  // (a grant that returned after stop still has its place in the order).
  struct Key {
    std::int64_t key, wait;
    const Rec* rec;
  };
  auto in_window = [&](const Rec& r) { return r.grant >= go && r.grant <= stop; };
  auto key_of = [&](const Rec& r) -> std::int64_t {
    if (order_by_fence) return r.grant > 0 ? static_cast<std::int64_t>(r.fence) : kInf;
    return in_window(r) ? r.grant : kInf;
  };
  std::vector<Key> all;
  for (const auto& r : recs) {
    if (r.wait >= stop) continue;
    all.push_back({key_of(r), r.wait, &r});
    if (!in_window(r)) ++m.pending_at_stop;
  }
  std::sort(all.begin(), all.end(), [](const Key& a, const Key& b) { return a.key < b.key; });
  std::vector<std::int64_t> sufmin(all.size() + 1, kInf);
  std::vector<const Rec*> sufarg(all.size() + 1, nullptr);
  for (std::size_t i = all.size(); i-- > 0;) {
    sufmin[i] = sufmin[i + 1];
    sufarg[i] = sufarg[i + 1];
    if (all[i].wait < sufmin[i]) {
      sufmin[i] = all[i].wait;
      sufarg[i] = all[i].rec;
    }
  }
  auto first_after = [&](std::int64_t t) {
    auto it = std::upper_bound(all.begin(), all.end(), t, [](std::int64_t v, const Key& k) { return v < k.key; });
    return static_cast<std::size_t>(it - all.begin());
  };
  // Earliest start among requests granted strictly after key t (or never).
  auto earliest_waiting_after = [&](std::int64_t t) { return sufmin[first_after(t)]; };

  // A lock's grants are causally ordered (the next grant needs the release),
  // so its grant timestamps need no tolerance. Fences are exact. Otherwise
  // (a semaphore ordered by return times) both sides get the tolerance.
  const std::int64_t tol_grant = (permits == 1 || order_by_fence) ? 0 : tol_ns;
  long long strict = 0;
  for (const Rec* j : g) {
    const std::int64_t kj = key_of(*j);
    const std::size_t at = first_after(order_by_fence ? kj : kj + tol_grant);
    std::int64_t w = sufmin[at];
    if (w != kInf && w < j->wait - tol_ns) {
      ++m.overtakes;
      m.overtake_margin_max_ms = std::max(m.overtake_margin_max_ms, static_cast<double>(j->wait - w) / 1e6);
      if (has_fences) {
        const Rec* i = sufarg[at];
        if (i->grant == 0 || i->fence == 0) ++m.overtakes_unclassified;
        else if (i->fence > j->fence) ++m.overtakes_later_arrival;
        else ++m.overtakes_fifo_violation;
      }
    }
    std::int64_t ws = earliest_waiting_after(kj);
    if (ws != kInf && ws < j->wait) ++strict;
  }
  if (m.grants > 0) {
    m.overtakes_per_100 = 100.0 * static_cast<double>(m.overtakes) / static_cast<double>(m.grants);
    m.overtakes_strict_per_100 = 100.0 * static_cast<double>(strict) / static_cast<double>(m.grants);
  }

  std::vector<double> handoff_us, wait_ms;
  for (const Rec* r : g) wait_ms.push_back(static_cast<double>(r->grant - r->wait) / 1e6);
  if (permits == 1) {
    for (std::size_t k = 1; k < g.size(); ++k) {
      const Rec& prev = *g[k - 1];
      const Rec& cur = *g[k];
      if (cur.part == prev.part) {
        ++m.regrabs;
        std::int64_t w = earliest_waiting_after(key_of(cur));
        if (w != kInf && w < prev.rel_start - tol_ns) ++m.regrabs_waiting;
      } else {
        ++m.cross;
        if (cur.wait < prev.rel_start) {
          ++m.handoffs;
          handoff_us.push_back(static_cast<double>(cur.grant - prev.rel_end) / 1e3);
        }
      }
      if (has_fences && cur.fence <= prev.fence) ++m.fence_inversions;
    }
    if (m.grants > 1) {
      m.regrab_pct = 100.0 * static_cast<double>(m.regrabs) / static_cast<double>(m.grants - 1);
      m.regrab_waiting_pct = 100.0 * static_cast<double>(m.regrabs_waiting) / static_cast<double>(m.grants - 1);
    }
    m.cross_per_s = m.window_s > 0 ? static_cast<double>(m.cross) / m.window_s : 0;
  }
  if (has_fences) {
    // Tickets are max(last + 1, now_ms * 1000): floor(ticket / 1000) is the
    // Redis TIME millisecond of arrival (same machine, same realtime clock).
    std::vector<double> delay;
    for (const auto& r : recs) {
      if (r.grant == 0 || r.fence == 0 || r.wait_rt_us == 0) continue;
      const std::uint64_t arrival_ms = r.fence / 1000;  // floor: whole milliseconds
      delay.push_back(static_cast<double>(arrival_ms) - static_cast<double>(r.wait_rt_us) / 1000.0);
    }
    m.arrival_delay_p50_ms = quantile(delay, 0.5);
    m.arrival_delay_p99_ms = quantile(delay, 0.99);
    m.arrival_delay_max_ms = delay.empty() ? 0 : *std::max_element(delay.begin(), delay.end());
  }
  m.handoff_p50_us = quantile(handoff_us, 0.5);
  m.handoff_p99_us = quantile(handoff_us, 0.99);
  m.wait_p50_ms = quantile(wait_ms, 0.5);
  m.wait_p99_ms = quantile(wait_ms, 0.99);
  m.wait_max_ms = wait_ms.empty() ? 0 : *std::max_element(wait_ms.begin(), wait_ms.end());

  // Max overlap of client-observed holding intervals. Each lies inside the
  // server-side grant (granted before lock() returns, released after
  // unlock() is called), so an overlap above `permits` would be a real
  // violation.
  std::vector<std::pair<std::int64_t, int>> ev;
  for (const auto& r : recs) {
    if (r.grant > 0 && r.rel_start > 0) {
      ev.emplace_back(r.grant, +1);
      ev.emplace_back(r.rel_start, -1);
    }
  }
  std::sort(ev.begin(), ev.end());  // at equal times -1 sorts first
  int cur = 0;
  for (const auto& e : ev) {
    cur += e.second;
    m.max_holders = std::max(m.max_holders, cur);
  }
  return m;
}

}  // namespace fbench
