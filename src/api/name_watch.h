#pragma once
// The wake subscription a wait holds on its name, where grants are
// signalled per name (keyspace mode, or sharded publish on Redis Cluster):
// on the Wake of the node that owns the name, following the name when that
// changes (its slot moved). A value (the async driver's wait is copied into
// callbacks): whoever ends the wait stops it, once.
#include <atomic>
#include <string>

namespace fairlock::detail {

class Wake;

class NameWatch {
 public:
  // Watches `name` on `wake`; true once confirmed (waiting for it, bounded
  // as Wake::watch, unless `wait` is false).
  bool start(Wake& wake, const std::string& name, bool wait, const std::atomic<bool>* give_up = nullptr);
  // The name's node is now `wake`'s: the watch moves there if it was on
  // another (unwatch there, watch here without waiting).
  void follow(Wake& wake, const std::string& name);
  // Grants to `name` are signalled to this process on `wake` now.
  bool confirmed(Wake& wake, const std::string& name) const;
  void stop(const std::string& name) noexcept;

 private:
  Wake* wake_ = nullptr;  // none: not watching
};

}  // namespace fairlock::detail
