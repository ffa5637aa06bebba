#pragma once
// For test mains that start servers and child processes:
// fairlock::test::reap_children_when_we_die(), in the shared child-process
// helper.
#include "kit/child_process.h"
