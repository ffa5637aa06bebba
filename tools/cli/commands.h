// The subcommands of `fairlock`; each returns the process's exit status.
#pragma once

#include "args.h"

namespace fairlock::cli {

int cmd_run(const Args& a);     // run.cpp
int cmd_status(const Args& a);  // show.cpp, like the three below
int cmd_watch(const Args& a);
int cmd_list(const Args& a);
int cmd_evict(const Args& a);

}  // namespace fairlock::cli
