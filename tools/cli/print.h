// One name's queue as a table or as JSON.
#pragma once

#include <fairlock/fairlock.h>

#include <ostream>

namespace fairlock::cli {

void print_table(const fairlock::QueueState& st, std::ostream& out);
void print_json(const fairlock::QueueState& st, std::ostream& out);

}  // namespace fairlock::cli
