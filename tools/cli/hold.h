// `fairlock run NAME` without a command: hold until told to stop.
#pragma once

#include <cstdint>

namespace fairlock::cli {

// Prints `fence` on stdout (one line, flushed), then holds until end_hold()
// (a stopping signal, a lost lock) or until stdin reaches EOF (when it is a
// pipe, a socket or the terminal fairlock has in the foreground: a file or
// /dev/null would end the hold at once). Returns 0.
int hold(std::uint64_t fence);
// Ends the hold (also one that has not started yet); any thread.
void end_hold();

}  // namespace fairlock::cli
