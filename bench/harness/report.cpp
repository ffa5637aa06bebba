#include "report.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace fbench {

void Report::section(const std::string& title, const std::string& intro) { md_ += "\n### " + title + "\n\n" + intro; }

void Report::table(const std::vector<std::string>& columns, const std::string& align) {
  std::string head = "|", rule = "|";
  for (std::size_t i = 0; i < columns.size(); ++i) {
    head += columns[i].empty() ? " |" : " " + columns[i] + " |";
    rule += i < align.size() && align[i] == 'r' ? "---:|" : "---|";
  }
  md_ += head + "\n" + rule + "\n";
}

void Report::target(std::string id, std::string goal, std::string measured, bool met, std::string note) {
  targets_.push_back({std::move(id), std::move(goal), std::move(measured), met, std::move(note)});
}

void Report::fail(const std::string& what) {
  std::fprintf(stderr, "BENCHMARK ERROR: %s\n", what.c_str());
  broken_.push_back(what);
}

void Report::close_targets() {
  section("Targets");
  table({"#", "target", "measured", ""}, "llll");
  Json jt = Json::array();
  for (const auto& t : targets_) {
    md_ += fmt("| %s | %s | %s | %s |\n", t.id.c_str(), t.goal.c_str(), t.measured.c_str(),
               t.met ? "met" : ("**missed**" + (t.note.empty() ? std::string() : ": " + t.note)).c_str());
    Json j = Json::object();
    j["id"] = t.id;
    j["target"] = t.goal;
    j["measured"] = t.measured;
    j["met"] = t.met;
    if (!t.note.empty()) j["note"] = t.note;
    jt.push(j);
  }
  out["targets"] = jt;
  Json jb = Json::array();
  for (const auto& b : broken_) jb.push(b);
  out["benchmark_errors"] = jb;
}

void Report::write(const std::string& json_path, const std::string& md_path, const std::string& chart_dir) const {
  write_text(json_path, out.dump(1) + "\n");
  write_text(md_path, md_);
  for (const auto& [file, text] : dat_) write_text(chart_dir + file, text);
}

std::string num(double v, int prec) {
  if (std::isnan(v)) return "n/a";
  return fmt("%.*f", prec, v);
}

std::string thousands(double v) {
  if (std::isnan(v)) return "n/a";
  if (v >= 100) return fmt("%.0f", v);
  if (v >= 10) return fmt("%.1f", v);
  return fmt("%.2f", v);
}

std::string lat_cell(double us, double ratio) {
  if (std::isnan(us)) return "n/a";
  if (us >= 10000) return fmt("%.1f ms (%.0f×)", us / 1000, ratio);
  return fmt("%.0f µs (%.1f×)", us, ratio);
}

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void write_text(const std::string& path, const std::string& text) {
  if (path.empty()) return;
  std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp);
    f << text;
  }
  std::rename(tmp.c_str(), path.c_str());
}

}  // namespace fbench
