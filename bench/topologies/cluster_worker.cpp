// The many-names part's worker process (cluster.h): one Client, a few
// threads, each looping lock+unlock on a random name out of NAMES.
#include <fairlock/fairlock.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cluster.h"

namespace fcluster {

namespace {

// A thread's own FairLock on every name.
std::vector<std::unique_ptr<fairlock::FairLock>> locks_on(fairlock::Client& client, int names) {
  std::vector<std::unique_ptr<fairlock::FairLock>> locks;
  for (int i = 0; i < names; ++i) locks.push_back(std::make_unique<fairlock::FairLock>(client, many_name(i)));
  return locks;
}

// Lock+unlock on random names until `end`; the grants.
long long loop(std::vector<std::unique_ptr<fairlock::FairLock>>& locks, unsigned seed, Clock::time_point end) {
  std::mt19937 random(seed);
  std::uniform_int_distribution<std::size_t> pick(0, locks.size() - 1);
  long long grants = 0;
  while (Clock::now() < end) {
    auto& lock = *locks[pick(random)];
    lock.lock();
    ++grants;
    lock.unlock();
  }
  return grants;
}

}  // namespace

std::string many_name(int i) { return "many-" + std::to_string(i); }

int worker_main(const std::vector<std::string>& args) {
  if (args.size() != 5) throw std::runtime_error("usage: worker URL NAMES THREADS MILLISECONDS SEED");
  fairlock::Options o;
  o.url = args[0];
  const int names = std::stoi(args[1]), threads = std::stoi(args[2]);
  const std::chrono::milliseconds run(std::stoi(args[3]));
  const auto seed = static_cast<unsigned>(std::stoul(args[4]));
  fairlock::Client client(o);
  std::vector<std::vector<std::unique_ptr<fairlock::FairLock>>> locks;
  for (int t = 0; t < threads; ++t) locks.push_back(locks_on(client, names));
  for (auto& l : *locks.begin()) l->lock(), l->unlock();  // warm up: every master's connections and library
  std::printf("ready\n");
  std::fflush(stdout);
  std::string go;
  if (!std::getline(std::cin, go) || go != "go") return 1;
  const auto end = Clock::now() + run;
  std::atomic<long long> grants{0};
  std::vector<std::thread> running;
  for (int t = 0; t < threads; ++t)
    running.emplace_back([&, t] { grants += loop(locks[t], seed * 1000 + static_cast<unsigned>(t), end); });
  for (auto& t : running) t.join();
  std::printf("grants %lld\n", grants.load());
  std::fflush(stdout);
  return 0;
}

}  // namespace fcluster
