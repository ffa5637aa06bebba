// `run`'s place in line on stderr, with who holds the name (on a terminal, or with -v).
#pragma once

#include <fairlock/fairlock.h>

#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace fairlock::cli {

// moved() (LockOptions::on_position) only notes the new place; a thread of
// its own asks who holds (one inspect per report, at most one report per
// kEvery) and prints "waiting, #N in line (#0 is next); held by ...".
class Progress {
 public:
  Progress(fairlock::Client& client, std::string name);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void moved(std::size_t position);
  // No more reports (the wait ended); waits for one being written.
  void stop();

 private:
  void loop();
  void report(std::size_t position);

  fairlock::Client& client_;
  const std::string name_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::optional<std::size_t> pending_;
  bool stopped_ = false;
  std::thread thread_;
};

}  // namespace fairlock::cli
