// fairlock: wrap a command in a fair distributed lock, and look at queues.
// See `fairlock --help`; exit statuses are listed in usage.cpp and docs/COMMAND.md.
#include <fairlock/fairlock.h>

#include <cstdio>
#include <string>

#include "args.h"
#include "commands.h"
#include "exit_codes.h"
#include "usage.h"
#include "words.h"

using namespace fairlock::cli;

namespace {

int dispatch(const Args& a) {
  if (a.version) {
    std::printf("fairlock %s\n", FAIRLOCK_VERSION_STRING);
    return 0;
  }
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
  throw UsageError("fairlock: unknown command '" + a.command + "' (see fairlock --help)");
}

// A usage error's one line: messages that do not name the command yet get it.
int usage_error(const std::string& command, const std::string& what) {
  if (what.rfind("fairlock", 0) == 0) {
    std::fprintf(stderr, "%s\n", what.c_str());
  } else {
    const std::string who = command.empty() ? "fairlock" : "fairlock " + command;
    std::fprintf(stderr, "%s: %s (see %s --help)\n", who.c_str(), what.c_str(), who.c_str());
  }
  return kUsage;
}

// An error's one line, "fairlock: " once: the library's messages start
// with it or not, and name Options fields where the command has flags.
int failed(const std::exception& e, int status) {
  const std::string prefix = "fairlock: ";
  std::string what = in_cli_words(e.what());
  if (what.rfind(prefix, 0) == 0) what.erase(0, prefix.size());
  std::fprintf(stderr, "%s%s\n", prefix.c_str(), what.c_str());
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  std::string command;
  try {
    Args a = parse(argc, argv);
    command = a.command;
    return dispatch(a);
  } catch (const UsageError& e) {
    if (*e.what()) return usage_error(command, e.what());
    std::fputs(kUsageText, stderr);
    return kUsage;
  } catch (const fairlock::BadOption& e) {
    return usage_error(command, flag_for(e.option()) + ": " + e.problem());
  } catch (const std::invalid_argument& e) {
    return usage_error(command, in_cli_words(e.what()));
  } catch (const fairlock::TlsError& e) {
    return failed(e, fairlock::is_setup_error(e) ? kConfig : kUnavailable);  // cured by no retry, or perhaps by one
  } catch (const fairlock::EvictionPolicyError& e) {
    return failed(e, kConfig);
  } catch (const fairlock::UnknownMasterError& e) {
    return failed(e, kConfig);
  } catch (const fairlock::AccessDenied& e) {
    return failed(e, kAccessDenied);
  } catch (const fairlock::EvictedError& e) {
    return failed(e, kEvicted);
  } catch (const fairlock::NotReplicatedError& e) {
    return failed(e, kUnavailable);  // the replicas may be back soon
  } catch (const fairlock::ConnectionError& e) {
    return failed(e, kUnavailable);
  } catch (const fairlock::TimeoutError& e) {
    return failed(e, kUnavailable);
  } catch (const std::exception& e) {
    return failed(e, kSoftware);
  }
}
