// D. The scale of one queue: per-call script time and memory per waiter with
// 10 ... 100000 protocol-level waiters queued on one name.
#include <cmath>
#include <deque>
#include <memory>

#include "scenarios.h"
#include "systems.h"

namespace fbench {
namespace {

constexpr std::uint64_t kCid = 0xd0d0d0d0ULL;

// The server's count and time of FCALL (the raw calls run the scripts as
// functions, as the client does by default).
CmdStat fcall_stat(Redis& r) { return snapshot(r).cmds["fcall"]; }

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? NAN : s / static_cast<double>(v.size());
}

struct Queue {
  long long n;
  std::unique_ptr<RawKeys> k;
  std::string holder;
  std::deque<std::string> waiters;
  std::vector<double> acq, rel, acq_wall, rel_wall;
  long long mq = 0, mw = 0;
  double per_waiter = 0, per_waiter_info = 0;
};

// A holder and `q.n` waiters on the queue's name, and their memory.
bool fill(Env& e, Redis& c, Queue& q, std::uint64_t& counter) {
  const long long mem0 = snapshot(*e.admin).used_memory;
  q.holder = fake_member('p', kCid, ++counter, 600000);
  Reply h = c.cmd(raw_acquire_argv(*q.k, q.holder, 1, 600000, 600000, 'q'));
  if (h->type != REDIS_REPLY_ARRAY || reply_int(h->element[0]) != 1) {
    e.fail("D: holder not granted: " + reply_text(h.get()));
    return false;
  }
  for (long long i = 0; i < q.n;) {
    std::vector<std::vector<std::string>> batch;
    for (int b = 0; b < 1000 && i < q.n; ++b, ++i) {
      q.waiters.push_back(fake_member('p', kCid, ++counter, 600000));
      batch.push_back(raw_acquire_argv(*q.k, q.waiters.back(), 1, 600000, 600000, 'f'));
    }
    for (auto& r : c.pipeline(batch)) {
      if (r->type != REDIS_REPLY_ARRAY || reply_int(r->element[0]) != 0) {
        e.fail("D: waiter not queued: " + reply_text(r.get()));
        return false;
      }
    }
  }
  const long long mem1 = snapshot(*e.admin).used_memory;
  q.mq = reply_int(c.cmd({"MEMORY", "USAGE", q.k->q, "SAMPLES", "0"}).get());
  q.mw = reply_int(c.cmd({"MEMORY", "USAGE", q.k->w, "SAMPLES", "0"}).get());
  q.per_waiter = static_cast<double>(q.mq + q.mw) / static_cast<double>(q.n);
  q.per_waiter_info = static_cast<double>(mem1 - mem0) / static_cast<double>(q.n);
  return true;
}

// One cycle: a newcomer queues at the tail, the holder hands the lock to the
// head (the queue keeps its length); each call's server time.
bool cycle(Env& e, Redis& c, Queue& q, std::uint64_t& counter) {
  CmdStat s0 = fcall_stat(c);
  std::string m = fake_member('p', kCid, ++counter, 600000);
  std::int64_t t0 = now_ns();
  Reply a = c.cmd(raw_acquire_argv(*q.k, m, 1, 600000, 600000, 'f'));  // a fresh member, as the client sends it
  std::int64_t t1 = now_ns();
  CmdStat s1 = fcall_stat(c);
  Reply r = c.cmd(raw_release_argv(*q.k, q.holder, 1));
  std::int64_t t2 = now_ns();
  CmdStat s2 = fcall_stat(c);
  if (a->type != REDIS_REPLY_ARRAY || reply_int(a->element[0]) != 0 || reply_int(r.get()) != 1) {
    e.fail("D: unexpected reply " + reply_text(a.get()) + " / " + reply_text(r.get()));
    return false;
  }
  if (s1.calls - s0.calls != 1 || s2.calls - s1.calls != 1) {
    e.fail("D: another client ran scripts during the measurement");
    return false;
  }
  q.acq.push_back(static_cast<double>(s1.usec - s0.usec));
  q.rel.push_back(static_cast<double>(s2.usec - s1.usec));
  q.acq_wall.push_back(static_cast<double>(t1 - t0) / 1e3);
  q.rel_wall.push_back(static_cast<double>(t2 - t1) / 1e3);
  q.waiters.push_back(m);
  q.holder = q.waiters.front();
  q.waiters.pop_front();
  return true;
}

// One queue's JSON, row, chart line and progress line; then its keys go.
Json report_queue(Env& e, Redis& c, const Queue& q, int cycles, std::string& dat) {
  Json j = Json::object();
  j["waiters"] = q.n;
  j["cycles"] = cycles;
  j["acquire_usec_per_call_mean"] = mean(q.acq);
  j["acquire_usec_per_call_median"] = median(q.acq);
  j["release_usec_per_call_mean"] = mean(q.rel);
  j["release_usec_per_call_median"] = median(q.rel);
  j["acquire_wall_us_median"] = median(q.acq_wall);
  j["release_wall_us_median"] = median(q.rel_wall);
  j["memory_usage_q_bytes"] = q.mq;
  j["memory_usage_w_bytes"] = q.mw;
  j["bytes_per_waiter_memory_usage"] = q.per_waiter;
  j["bytes_per_waiter_used_memory"] = q.per_waiter_info;
  e.report.md(fmt("| %lld | %.1f (%.0f) | %.1f (%.0f) | %.0f | %.0f |\n", q.n, mean(q.acq), median(q.acq), mean(q.rel),
                  median(q.rel), q.per_waiter, q.per_waiter_info));
  dat += fmt("%lld %.3f %.3f %.1f\n", q.n, mean(q.acq), mean(q.rel), q.per_waiter);
  say(fmt("  %6lld waiters: acquire %.1f us/call, release %.1f us/call, %.0f bytes/waiter\n", q.n, mean(q.acq),
          mean(q.rel), q.per_waiter));
  for (const std::string& key : {q.k->q, q.k->w, q.k->h, q.k->g, q.k->seq, q.k->o}) c.cmd({"UNLINK", key});
  return j;
}

void targets_D(Env& e, const Queue& lo, const Queue& hi) {
  const double ra = mean(hi.acq) / mean(lo.acq), rr = mean(hi.rel) / mean(lo.rel);
  e.report.target("D1", fmt("per-call script cost at %lld waiters ≤ 2 × at %lld", hi.n, lo.n),
                  fmt("acquire %.2f×, release %.2f×", ra, rr), ra <= 2 && rr <= 2);
  e.report.target("D2", "≤ 150 bytes per waiter",
                  fmt("%.0f bytes (MEMORY USAGE of q + w at %lld)", hi.per_waiter, hi.n), hi.per_waiter <= 150,
                  hi.per_waiter <= 150 ? ""
                                       : "each waiter is a member in q of 43 bytes plus its lease's digits (a skiplist "
                                         "node, a dict entry and the member's copy; over 44 bytes it leaves Redis's "
                                         "48-byte allocation); w holds one entry per process");
}

void heading_D(Env& e, int cycles) {
  e.report.section(
      "D. Scale of one queue (waiters are protocol-level entries kept alive by a long liveness)",
      fmt("Server time per script call is Redis's own `usec` accounting (INFO commandstats), call by call, for "
          "the acquire that queues a newcomer at the tail and the release that hands the lock to the head (the "
          "queue keeps its length). The sizes are measured interleaved, %d cycles each; mean (median).\n\n",
          cycles));
  e.report.table({"queued waiters", "acquire (queue) µs/call", "release (handoff) µs/call",
                  "bytes/waiter (MEMORY USAGE q+w)", "bytes/waiter (used_memory)"},
                 "rrrrr");
}

}  // namespace

void scenario_D(Env& e) {
  say("\n== D. Scale of one queue\n");
  flushall(e);
  const std::vector<long long> sizes =
      e.smoke ? std::vector<long long>{10, 1000} : std::vector<long long>{10, 1000, 10000, 100000};
  const int cycles = e.smoke ? 100 : 2000;
  heading_D(e, cycles);
  Redis c(e.host, e.port, 30000);
  std::uint64_t counter = 0;
  std::vector<Queue> qs;
  for (long long N : sizes) {
    Queue q;
    q.n = N;
    q.k = std::make_unique<RawKeys>("fairlock", fmt("bench:D:%lld", N));
    if (!fill(e, c, q, counter)) return;
    qs.push_back(std::move(q));
  }
  for (int i = 0; i < cycles; ++i) {
    for (auto& q : qs) {
      if (!cycle(e, c, q, counter)) return;
    }
  }
  Json jd = Json::object();
  std::string dat;
  for (auto& q : qs) jd[fmt("N%lld", q.n)] = report_queue(e, c, q, cycles, dat);
  e.report.chart("d.dat", dat);
  e.report.out["D_one_queue"] = jd;
  targets_D(e, qs.front(), qs.back());
}

}  // namespace fbench
