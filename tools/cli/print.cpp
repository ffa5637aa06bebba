#include "print.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "text.h"

namespace fairlock::cli {

void print_table(const fairlock::QueueState& st, std::ostream& out) {
  out << "name " << printable(st.name) << "  permits " << st.permits << "  holders " << st.holder_count << "  waiters "
      << st.waiter_count << "  last fence " << st.last_fence << "\n";
  char line[256];
  if (!st.holders.empty()) {
    std::snprintf(line, sizeof line, "  %-8s %-50s %18s %9s %11s\n", "HOLDER", "TOKEN", "FENCE", "HELD", "LEASE LEFT");
    out << line;
    for (const auto& h : st.holders) {
      std::snprintf(line, sizeof line, "  %-8s %-50s %18llu %9s %11s\n", "", printable(h.token).c_str(),
                    static_cast<unsigned long long>(h.fence), human(h.held).c_str(), human(h.lease_left).c_str());
      out << line;
    }
  }
  if (!st.waiters.empty()) {
    std::snprintf(line, sizeof line, "  %-8s %-50s %18s %9s %11s\n", "WAITER", "TOKEN", "TICKET", "WAITED",
                  "LIVE LEFT");
    out << line;
    for (const auto& w : st.waiters) {
      std::snprintf(line, sizeof line, "  #%-7zu %-50s %18llu %9s %11s\n", w.position, printable(w.token).c_str(),
                    static_cast<unsigned long long>(w.ticket), human(w.waited).c_str(), human(w.liveness_left).c_str());
      out << line;
    }
    if (st.waiter_count > st.waiters.size()) out << "  ... and " << st.waiter_count - st.waiters.size() << " more\n";
  }
  if (st.holders.empty() && st.waiters.empty()) out << "  (idle)\n";
}

void print_json(const fairlock::QueueState& st, std::ostream& out) {
  out << "{\"name\":" << json_string(st.name) << ",\"permits\":" << st.permits << ",\"last_fence\":" << st.last_fence
      << ",\"holder_count\":" << st.holder_count << ",\"waiter_count\":" << st.waiter_count
      << ",\"server_time_ms\":" << st.server_time_ms << ",\"holders\":[";
  for (std::size_t i = 0; i < st.holders.size(); ++i) {
    const auto& h = st.holders[i];
    out << (i ? "," : "") << "{\"token\":" << json_string(h.token) << ",\"fence\":" << h.fence
        << ",\"held_ms\":" << h.held.count() << ",\"lease_left_ms\":" << h.lease_left.count() << "}";
  }
  out << "],\"waiters\":[";
  for (std::size_t i = 0; i < st.waiters.size(); ++i) {
    const auto& w = st.waiters[i];
    out << (i ? "," : "") << "{\"token\":" << json_string(w.token) << ",\"position\":" << w.position
        << ",\"ticket\":" << w.ticket << ",\"waited_ms\":" << w.waited.count()
        << ",\"liveness_left_ms\":" << w.liveness_left.count() << "}";
  }
  out << "]}\n";
}

void print_list_table(const std::vector<fairlock::NameSummary>& names, std::ostream& out) {
  std::size_t width = 4;  // "NAME"
  for (const auto& n : names) width = std::max(width, printable(n.name).size());
  const std::string pad(width, ' ');
  out << "NAME" << pad.substr(4) << "  HOLDERS  WAITERS\n";
  char counts[48];
  for (const auto& n : names) {
    const std::string shown = printable(n.name);
    std::snprintf(counts, sizeof counts, "  %7zu  %7zu\n", n.holders, n.waiters);
    out << shown << pad.substr(shown.size()) << counts;
  }
}

void print_list_json(const std::vector<fairlock::NameSummary>& names, std::ostream& out) {
  out << "[";
  for (std::size_t i = 0; i < names.size(); ++i) {
    out << (i ? "," : "") << "{\"name\":" << json_string(names[i].name) << ",\"holders\":" << names[i].holders
        << ",\"waiters\":" << names[i].waiters << "}";
  }
  out << "]\n";
}

}  // namespace fairlock::cli
