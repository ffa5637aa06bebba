#include "words.h"

#include <utility>

namespace fairlock::cli {
namespace {

// Longest identifiers first: "Options::tls" is a prefix of the fields after it.
const std::pair<const char*, const char*> kFlags[] = {
    {"Options::allow_evicting_server", "--allow-evicting-server"},
    {"Options::tls.min_version", "--tls-min-version"},
    {"Options::tls.server_name", "--sni"},
    {"Options::tls.cert_file", "--cert"},
    {"Options::tls.key_file", "--key"},
    {"Options::tls.ca_file", "--cacert"},
    {"Options::tls.ca_dir", "--cacertdir"},
    {"Options::key_prefix", "--prefix"},
    {"Options::sync_replicas", "--sync-replicas"},
    {"LockOptions::lease", "--lease"},
    {"Options::tls", "the TLS options"},
    {"Options::url", "--url ($FAIRLOCK_URL)"},
    {"Options::sentinel's", "$FAIRLOCK_SENTINEL_USER and $FAIRLOCK_SENTINEL_PASSWORD"},
};

// Arguments named only by a BadOption's option(), never replaced inside a text.
const std::pair<const char*, const char*> kArguments[] = {
    {"permits", "--permits"},
    {"name", "NAME"},
    {"token", "TOKEN"},
};

}  // namespace

std::string flag_for(const std::string& option) {
  for (const auto& [id, flag] : kFlags) {
    if (option == id) return flag;
  }
  for (const auto& [id, flag] : kArguments) {
    if (option == id) return flag;
  }
  return option;
}

std::string in_cli_words(std::string what) {
  for (const auto& [id, flag] : kFlags) {
    const std::string from = id, to = flag;
    for (std::size_t at = what.find(from); at != std::string::npos; at = what.find(from, at + to.size())) {
      what.replace(at, from.size(), to);
    }
  }
  return what;
}

}  // namespace fairlock::cli
