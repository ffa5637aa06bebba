// `fairlock status`, `watch`, `list` and `evict`: look at queues, remove a wedged entry.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <exception>
#include <iostream>
#include <sstream>
#include <string>

#include "commands.h"
#include "exit_codes.h"
#include "print.h"
#include "text.h"

namespace fairlock::cli {

int cmd_status(const Args& a) {
  need_positional(a, 1, "status [--json] NAME");
  fairlock::Client client(client_options(a));
  auto st = client.inspect(a.positional[0]);
  if (a.has("--json")) {
    print_json(st, std::cout);
  } else {
    print_table(st, std::cout);
  }
  return 0;
}

int cmd_watch(const Args& a) {
  need_positional(a, 1, "watch [--interval D] [--count N] NAME");
  auto interval = a.values.count("--interval") ? parse_duration(a.values.at("--interval"), "--interval")
                                               : std::chrono::milliseconds(1000);
  long long count = a.values.count("--count") ? parse_count(a.values.at("--count"), "--count", 1, 1000000000) : -1;
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  fairlock::Client client(client_options(a));
  const bool tty = ::isatty(STDOUT_FILENO);
  for (long long n = 0; count < 0 || n < count; ++n) {
    auto st = client.inspect(a.positional[0], 50);
    std::ostringstream frame;
    if (tty) frame << "\033[H\033[2J";
    print_table(st, frame);
    if (!tty) frame << "\n";
    std::cout << frame.str() << std::flush;
    if (count >= 0 && n + 1 >= count) break;
    timespec ts{static_cast<time_t>(interval.count() / 1000), static_cast<long>(interval.count() % 1000) * 1000000};
    if (sigtimedwait(&set, nullptr, &ts) > 0) break;  // interrupted: stop cleanly
  }
  return 0;
}

int cmd_list(const Args& a) {
  if (a.positional.size() > 1) throw UsageError("usage: fairlock list [--json] [PATTERN]");
  fairlock::Client client(client_options(a));
  const auto names = client.list(a.positional.empty() ? "*" : a.positional[0]);
  if (a.has("--json")) {
    print_list_json(names, std::cout);
  } else {
    print_list_table(names, std::cout);
  }
  return 0;
}

int cmd_evict(const Args& a) {
  need_positional(a, 2, "evict NAME TOKEN");
  fairlock::Client client(client_options(a));
  fairlock::Evicted found = fairlock::Evicted::none;
  try {
    found = client.evict(a.positional[0], a.positional[1]);
  } catch (const fairlock::BadOption& e) {
    if (e.option() != "token") throw;
    std::fprintf(stderr, "fairlock: %s: no holder or waiter %s (not a token: it %s)\n",
                 printable(a.positional[0]).c_str(), printable(a.positional[1]).c_str(), e.problem().c_str());
    return kNotFound;
  }
  switch (found) {
    case fairlock::Evicted::holder: std::printf("evicted holder %s\n", a.positional[1].c_str()); return 0;
    case fairlock::Evicted::waiter: std::printf("evicted waiter %s\n", a.positional[1].c_str()); return 0;
    case fairlock::Evicted::none: break;
  }
  std::fprintf(stderr, "fairlock: %s: no holder or waiter %s\n", printable(a.positional[0]).c_str(),
               a.positional[1].c_str());
  return kNotFound;
}

}  // namespace fairlock::cli
