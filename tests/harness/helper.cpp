// A participant in its own process, for multi-process tests.
//   helper URL hold  NAME LEASE_MS [LIVENESS_MS [DESCRIPTION]]
//                                             lock, print "fence N", sleep until killed
//   helper URL wait  NAME LIVENESS_MS [DESCRIPTION]
//                                             lock, print "granted N", unlock, exit
//   helper URL count NAME ITER KEY            ITER x (lock; GET KEY; SET KEY v+1; unlock)
//   helper URL order NAME LOGKEY ID [CAFILE PLAIN_PORT]
//                                             lock; RPUSH LOGKEY ID; unlock (over TLS: a rediss://
//                                             URL, its CA, and the plain port for RPUSH)
#include <fairlock/fairlock.h>
#include <hiredis/hiredis.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>

int main(int argc, char** argv) {
  if (argc < 4) {
    std::cerr << "usage: helper URL MODE NAME ...\n";
    return 2;
  }
  std::string url = argv[1], mode = argv[2], name = argv[3];
  fairlock::Options opts;
  opts.url = url;
  if (mode == "order" && argc > 7) opts.tls.ca_file = argv[6];
  if (mode == "wait" && argc > 4) opts.liveness_ttl = std::chrono::milliseconds(std::atoll(argv[4]));
  if (mode == "wait" && argc > 5) opts.description = argv[5];
  if (mode == "hold" && argc > 5) opts.liveness_ttl = std::chrono::milliseconds(std::atoll(argv[5]));
  if (mode == "hold" && argc > 6) opts.description = argv[6];
  fairlock::Client client(opts);
  if (mode == "hold") {
    fairlock::LockOptions lo;
    lo.lease = std::chrono::milliseconds(std::atoll(argv[4]));
    fairlock::FairLock lock(client, name, lo);
    lock.lock();
    std::printf("fence %llu\n", static_cast<unsigned long long>(lock.fence()));
    std::fflush(stdout);
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  if (mode == "wait") {
    fairlock::FairLock lock(client, name);
    lock.lock();
    std::printf("granted %llu\n", static_cast<unsigned long long>(lock.fence()));
    std::fflush(stdout);
    lock.unlock();
    return 0;
  }
  // count / order need a plain connection for the protected resource.
  auto colon = url.rfind(':');
  int plain_port = (mode == "order" && argc > 7) ? std::atoi(argv[7]) : std::atoi(url.c_str() + colon + 1);
  redisContext* c = redisConnect("127.0.0.1", plain_port);
  if (!c || c->err) return 3;
  fairlock::FairLock lock(client, name);
  if (mode == "count") {
    int iter = std::atoi(argv[4]);
    const char* key = argv[5];
    for (int i = 0; i < iter; ++i) {
      std::lock_guard<fairlock::FairLock> guard(lock);
      auto* r = static_cast<redisReply*>(redisCommand(c, "GET %s", key));
      long v = (r && r->type == REDIS_REPLY_STRING) ? std::atol(r->str) : 0;
      freeReplyObject(r);
      r = static_cast<redisReply*>(redisCommand(c, "SET %s %ld", key, v + 1));
      freeReplyObject(r);
    }
  } else if (mode == "order") {
    std::lock_guard<fairlock::FairLock> guard(lock);
    auto* r = static_cast<redisReply*>(redisCommand(c, "RPUSH %s %s", argv[4], argv[5]));
    freeReplyObject(r);
  } else {
    return 2;
  }
  redisFree(c);
  return 0;
}
