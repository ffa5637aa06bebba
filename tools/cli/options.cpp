#include "options.h"

#include <algorithm>
#include <iterator>

namespace fairlock::cli {
namespace {

const OptionSpec kOptions[] = {
    {"--url", 'u', true, ""},
    {"--prefix", 0, true, ""},
    {"--allow-evicting-server", 0, false, ""},
    {"--tls", 0, false, ""},
    {"--cacert", 0, true, ""},
    {"--cacertdir", 0, true, ""},
    {"--cert", 0, true, ""},
    {"--key", 0, true, ""},
    {"--sni", 0, true, ""},
    {"--tls-min-version", 0, true, ""},
    {"--insecure", 0, false, ""},
    {"--help", 'h', false, ""},
    {"--version", 0, false, " "},  // before the subcommand word only
    {"--permits", 'p', true, " run "},
    {"--lease", 'l', true, " run "},
    {"--wait", 0, true, " run "},
    {"--timeout", 'w', true, " run "},
    {"--nonblock", 'n', false, " run "},
    {"--conflict-exit-code", 'E', true, " run "},
    {"--kill-on-loss", 'k', false, " run "},
    {"--verbose", 'v', false, " run "},
    {"--sync-replicas", 0, true, " run "},
    {"--json", 0, false, " status list "},
    {"--interval", 0, true, " watch "},
    {"--count", 0, true, " watch "},
};

}  // namespace

const OptionSpec* find_option(const std::string& word) {
  const auto* end = std::end(kOptions);
  const auto* found = std::find_if(std::begin(kOptions), end, [&](const OptionSpec& o) {
    return word == o.name || (o.short_name && word.size() == 2 && word[0] == '-' && word[1] == o.short_name);
  });
  return found == end ? nullptr : found;
}

bool applies(const OptionSpec& spec, const std::string& command) {
  const std::string scope = spec.commands;
  if (scope.empty()) return true;
  if (command.empty()) return scope == " ";
  return scope.find(" " + command + " ") != std::string::npos;
}

}  // namespace fairlock::cli
