#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include <stdexcept>

#include "api/client_impl.h"
#include "base/retry_policy.h"
#include "fairlock/errors.h"
#include "node/failure.h"
#include "node/server_calls.h"
#include "protocol/formats.h"

namespace fairlock {
namespace detail {

namespace {

void check_duration(std::chrono::milliseconds v, const char* what) {
  if (v.count() <= 0) throw BadOption(what, "must be positive");
  if (v > limits::kMaxDuration) throw BadOption(what, "at most 2147483647 ms");
}

void check_tls(const Options& o) {
  const TlsOptions& t = o.tls;
  if (t.cert_file.empty() != t.key_file.empty()) {
    throw BadOption(t.cert_file.empty() ? "Options::tls.cert_file" : "Options::tls.key_file",
                    "Options::tls.cert_file and key_file go together (both or neither)");
  }
  if (t.min_version != TlsVersion::v1_2 && t.min_version != TlsVersion::v1_3) {
    throw BadOption("Options::tls.min_version", "must be TlsVersion::v1_2 or v1_3");
  }
  const bool any = !t.ca_file.empty() || !t.ca_dir.empty() || !t.cert_file.empty() || !t.server_name.empty() ||
                   t.insecure_skip_verify_testing_only || t.min_version != TlsVersion::v1_2;
  if (any && !parse_url(o.url).tls)
    throw BadOption("Options::tls", "TLS options are set but Options::url is not rediss:// or rediss-sentinel://");
}

void check_sentinel(const Options& o) {
  const Address a = parse_address(o.url);
  if (o.sentinel.tls && !(a.via_sentinel() && a.node.tls)) {
    throw BadOption("Options::sentinel.tls", "set, but Options::url is not rediss-sentinel://");
  }
  if (!a.via_sentinel() && (!o.sentinel.user.empty() || !o.sentinel.password.empty())) {
    throw BadOption("Options::sentinel", "credentials set, but Options::url is not a Sentinel URL (redis-sentinel://)");
  }
}

// A WAIT is one call: its timeout, and the server's cron tick by which it
// is honoured (retry::kSyncSlack), must fit in command_timeout.
void check_sync(const Options& o) {
  if (o.sync_replicas < 0 || o.sync_replicas > 16) throw BadOption("Options::sync_replicas", "must be in [0, 16]");
  check_duration(o.sync_timeout, "Options::sync_timeout");
  if (o.sync_replicas > 0 && o.sync_timeout + retry::kSyncSlack > o.command_timeout) {
    throw BadOption("Options::sync_timeout", "must be shorter than Options::command_timeout by " +
                                                 std::to_string(retry::kSyncSlack.count()) + " ms at least");
  }
}

Options validated(Options o) {
  check_tls(o);
  check_sentinel(o);
  if (o.key_prefix.empty()) throw BadOption("Options::key_prefix", "must not be empty");
  if (o.key_prefix.size() > 128) throw BadOption("Options::key_prefix", "longer than 128 bytes");
  if (o.key_prefix.find_first_of("{}") != std::string::npos) {
    throw BadOption("Options::key_prefix", "must not contain '{' or '}'");
  }
  check_duration(o.connect_timeout, "Options::connect_timeout");
  check_duration(o.command_timeout, "Options::command_timeout");
  check_duration(o.liveness_ttl, "Options::liveness_ttl");
  if (o.liveness_ttl.count() < 30) throw BadOption("Options::liveness_ttl", "at least 30 ms");
  if (o.pool_size < 1 || o.pool_size > 1024) throw BadOption("Options::pool_size", "must be in [1, 1024]");
  check_sync(o);
  return o;
}

std::shared_ptr<spdlog::logger> logger_of(const Options& o) {
  if (o.logger) return o.logger;
  // Unregistered and silent: the library never touches spdlog's registry.
  return std::make_shared<spdlog::logger>("fairlock", std::make_shared<spdlog::sinks::null_sink_mt>());
}

const char* mode_name(Notify mode) {
  switch (mode) {
    case Notify::publish: return "publish";
    case Notify::keyspace: return "keyspace";
    case Notify::poll: return "poll";
  }
  return "?";
}

}  // namespace

ClientImpl::ClientImpl(Options o)
    : opts_(validated(std::move(o))),
      log_(logger_of(opts_)),
      id_(random_hex(8)),
      mode_(opts_.notify),
      async_(opts_.executor, log_, opts_.command_timeout, keeper_),
      session_(opts_.liveness_ttl, counters_, *log_),
      router_(make_router(opts_, id_, session_.wake_sink(), counters_, *log_)) {}

ClientImpl::~ClientImpl() { shutdown(); }

void ClientImpl::start() {
  session_.set_owner([weak = weak_from_this()] { return std::shared_ptr<void>(weak.lock()); });
  mode_ = router_->start();
  session_.start(*router_);
  router_->on_master_change([weak = weak_from_this()] {
    if (auto self = weak.lock()) self->recent_releases_.send_again(self);
  });
  log_->info("fairlock: client {} started ({} mode)", id_, mode_name(mode_));
}

void ClientImpl::check_running() const {
  if (stopping_.load()) throw Error("fairlock: the client is shut down");
}

void ClientImpl::shutdown() noexcept {
  stopping_.store(true);
  // Every round of async calls from now on, the leaves of the waits
  // cancelled here among them (AsyncWait::leaves_soon), ends within one
  // command_timeout of now, all together: a stalled server holds the
  // shutdown that long, not that long per round.
  async_.track_deadline(std::chrono::steady_clock::now() + opts_.command_timeout);
  session_.shutdown();  // cancels every wait: the async thread then ends those it drives
  async_.stop();
  router_->for_each([](Node& n) { n.server.unregister(); });
  router_->stop();
}

}  // namespace detail

// ---------------------------------------------------------------- Client

Client::Client(Options options) : impl_(std::make_shared<detail::ClientImpl>(std::move(options))) {
  detail::publicly([&] { impl_->start(); });
}

Client::~Client() { impl_->shutdown(); }

void Client::shutdown() noexcept { impl_->shutdown(); }

const Options& Client::options() const { return impl_->options(); }

const std::string& Client::id() const { return impl_->id(); }

Notify Client::notify_mode() const { return impl_->mode(); }

Stats Client::stats() const { return impl_->counters().snapshot(); }

QueueState Client::inspect(const std::string& name, std::size_t max_waiters) {
  impl_->check_running();
  detail::Keys keys(impl_->options().key_prefix, name);
  return detail::publicly([&] {
    detail::Server& server = impl_->router().for_keys(keys).server;
    QueueState state = detail::inspect(server, keys, name, max_waiters);
    const auto server_of = [this](const std::string& key) -> detail::Server& {
      return impl_->router().for_key(key).server;
    };
    detail::describe_clients(server_of, impl_->options().key_prefix, state);
    return state;
  });
}

Evicted Client::evict(const std::string& name, const std::string& token) {
  impl_->check_running();
  detail::Keys keys(impl_->options().key_prefix, name);
  return detail::publicly([&] { return detail::evict(impl_->router().for_keys(keys).server, keys, token); });
}

std::vector<NameSummary> Client::list(const std::string& pattern) {
  impl_->check_running();
  std::vector<NameSummary> out;
  detail::publicly([&] {
    impl_->router().for_each([&](detail::Node& node) {
      for (auto& n : detail::list(node.server, impl_->options().key_prefix, pattern)) out.push_back(std::move(n));
    });
  });
  return out;
}

}  // namespace fairlock
