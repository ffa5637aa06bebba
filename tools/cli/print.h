// One name's queue as a table or as JSON.
#pragma once

#include <fairlock/fairlock.h>

#include <ostream>
#include <vector>

namespace fairlock::cli {

void print_table(const fairlock::QueueState& st, std::ostream& out);
void print_json(const fairlock::QueueState& st, std::ostream& out);
// `fairlock list`: names aligned to the longest; as JSON, one array.
void print_list_table(const std::vector<fairlock::NameSummary>& names, std::ostream& out);
void print_list_json(const std::vector<fairlock::NameSummary>& names, std::ostream& out);

}  // namespace fairlock::cli
