#include "progress.h"

#include <chrono>
#include <cstdio>
#include <utility>

#include "text.h"

namespace fairlock::cli {
namespace {

// A queue that moves fast is reported at this pace, not at every step.
constexpr std::chrono::milliseconds kEvery{200};

// "held by HOST pid PID (DESCRIPTION)", "+N more" for a semaphore's other holders.
std::string holders_of(const fairlock::QueueState& st) {
  if (st.holders.empty()) return "";
  const auto& h = st.holders.front();
  std::string out = "; held by " + who(h.host, h.pid, h.description);
  if (st.holder_count > 1) out += " and " + std::to_string(st.holder_count - 1) + " more";
  return out;
}

}  // namespace

Progress::Progress(fairlock::Client& client, std::string name)
    : client_(client), name_(std::move(name)), thread_([this] { loop(); }) {}

Progress::~Progress() { stop(); }

void Progress::moved(std::size_t position) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    pending_ = position;
  }
  cv_.notify_one();
}

void Progress::stop() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stopped_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void Progress::loop() {
  std::unique_lock<std::mutex> lk(mu_);
  for (;;) {
    cv_.wait(lk, [this] { return stopped_ || pending_; });
    if (stopped_) return;
    const std::size_t position = *std::exchange(pending_, std::nullopt);
    lk.unlock();
    report(position);
    lk.lock();
    cv_.wait_for(lk, kEvery, [this] { return stopped_; });
  }
}

void Progress::report(std::size_t position) {
  std::string holders;
  try {
    holders = holders_of(client_.inspect(name_, 0));
  } catch (const std::exception&) {  // the place alone, then
  }
  std::fprintf(stderr, "fairlock: %s: waiting, #%zu in line (#0 is next)%s\n", printable(name_).c_str(), position,
               holders.c_str());
}

}  // namespace fairlock::cli
