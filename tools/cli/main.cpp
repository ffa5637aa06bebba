// fairlock: wrap a command in a fair distributed lock, and look at queues.
// See `fairlock --help`; exit statuses are listed in usage.cpp and the README.
#include <fairlock/fairlock.h>

#include <cstdio>
#include <string>

#include "args.h"
#include "commands.h"
#include "exit_codes.h"
#include "usage.h"

using namespace fairlock::cli;

int main(int argc, char** argv) {
  try {
    for (int i = 1; i < argc && std::string(argv[i]) != "--"; ++i) {
      if (std::string(argv[i]) == "--version") {
        std::printf("fairlock %s\n", FAIRLOCK_VERSION_STRING);
        return 0;
      }
    }
    Args a = parse(argc, argv);
    if (a.help) {
      std::fputs(command_help(a.command).c_str(), stdout);
      return 0;
    }
    if (a.command == "run") return cmd_run(a);
    if (a.command == "status") return cmd_status(a);
    if (a.command == "list") return cmd_list(a);
    if (a.command == "watch") return cmd_watch(a);
    if (a.command == "evict") return cmd_evict(a);
    if (a.command.empty()) throw UsageError("");
    throw UsageError("unknown command '" + a.command + "'");
  } catch (const UsageError& e) {
    if (*e.what()) {
      std::fprintf(stderr, "fairlock: %s (see fairlock --help)\n", e.what());
      return kUsage;
    }
    std::fputs(kUsageText, stdout);
    return argc > 1 ? 0 : kUsage;
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "fairlock: %s\n", e.what());
    return kUsage;
  } catch (const fairlock::TlsError& e) {
    std::fprintf(stderr, "fairlock: %s\n", e.what());
    return fairlock::is_setup_error(e) ? kConfig : kUnavailable;  // cured by no retry, or perhaps by one
  } catch (const fairlock::EvictionPolicyError& e) {
    std::fprintf(stderr, "fairlock: %s (for this command: --allow-evicting-server)\n", e.what());
    return kConfig;
  } catch (const fairlock::ConnectionError& e) {
    std::fprintf(stderr, "fairlock: %s\n", e.what());
    return kUnavailable;
  } catch (const fairlock::TimeoutError& e) {
    std::fprintf(stderr, "fairlock: %s\n", e.what());
    return kUnavailable;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fairlock: %s\n", e.what());
    return kSoftware;
  }
}
