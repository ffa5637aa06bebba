#pragma once
// What the driver reports: the JSON document (bench/results/latest.json), the
// Markdown tables (latest.md, printed at the end), the chart data files for
// chart.gp, the performance targets with their pass/miss, and the errors of
// the benchmark itself. Scenarios record into one Report; the driver writes
// it out.
#include <map>
#include <string>
#include <vector>

#include "common.h"

namespace fbench {

// One figure against its target: what was aimed at, what was measured, and
// whether it was met (a miss carries its explanation).
struct Target {
  std::string id, goal, measured;
  bool met = false;
  std::string note;
};

class Report {
 public:
  Json out = Json::object();  // latest.json

  // Markdown: a "### title" section, a table header, any text.
  void section(const std::string& title, const std::string& intro = "");
  // `align`: one letter a column, 'l' (left) or 'r' (right).
  void table(const std::vector<std::string>& columns, const std::string& align);
  void md(const std::string& text) { md_ += text; }
  void md_prepend(const std::string& text) { md_ = text + md_; }
  const std::string& markdown() const { return md_; }

  // A chart data file (written into the chart directory).
  void chart(const std::string& file, const std::string& text) { dat_[file] = text; }

  void target(std::string id, std::string goal, std::string measured, bool met, std::string note = "");
  // The benchmark itself failed somewhere: reported on stderr and in the JSON.
  void fail(const std::string& what);
  const std::vector<std::string>& broken() const { return broken_; }

  // Appends the targets table to the Markdown and the targets and errors to
  // the JSON.
  void close_targets();
  // Writes the JSON, the Markdown and the chart data (empty paths: skipped).
  void write(const std::string& json_path, const std::string& md_path, const std::string& chart_dir) const;

 private:
  std::string md_;
  std::map<std::string, std::string> dat_;
  std::vector<Target> targets_;
  std::vector<std::string> broken_;
};

// Table cells.
std::string num(double v, int prec = 1);  // "n/a" for NaN
std::string thousands(double v);          // 0, 1 or 2 decimals by size
std::string lat_cell(double us, double ratio);

std::string read_text(const std::string& path);
void write_text(const std::string& path, const std::string& text);  // atomically (rename)

}  // namespace fbench
