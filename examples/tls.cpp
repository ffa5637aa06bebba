// Over TLS: a rediss:// URL and the CA that signed the server's certificate
// are all it takes (the certificate and its name are verified).
//   fairlock_tls rediss://host:6380 /path/to/ca.crt
#include <fairlock/fairlock.h>

#include <iostream>
#include <mutex>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: fairlock_tls rediss://host:port CA_FILE\n";
    return 2;
  }
  fairlock::Options opts;
  opts.url = argv[1];          // rediss://[user:password@]host:port[/db]
  opts.tls.ca_file = argv[2];  // PEM; leave empty to use the system's CA store
  try {
    fairlock::Client client(opts);
    fairlock::FairLock lock(client, "orders:42");
    std::lock_guard<fairlock::FairLock> guard(lock);
    std::cout << "holding orders:42 over TLS with fence " << lock.fence() << "\n";
  } catch (const fairlock::TlsError& e) {  // e.reason(): unknown_ca, name_mismatch, expired, ...
    std::cerr << "tls: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {  // no server, a wrong password, ...
    std::cerr << "tls: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
