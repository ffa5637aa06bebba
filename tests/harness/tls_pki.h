#pragma once
// Certificates made at test time with the openssl command, in a temporary
// directory removed at exit: a CA, a second ("wrong") CA, and certificates
// for every TLS case the tests check.
#include <string>

namespace fairlock::test {

struct Pki {
  std::string dir;
  std::string ca, ca_key;                          // the trusted test CA
  std::string other_ca;                            // a CA the client does not trust
  std::string server_key;                          // one key for every server certificate below
  std::string server;                              // localhost + 127.0.0.1, signed by ca
  std::string wrong_ca;                            // the same names, signed by other_ca
  std::string other_name;                          // only DNS:other.example, signed by ca
  std::string expired;                             // valid in 2020 only
  std::string not_yet;                             // valid from 2090 on
  std::string client, client_key;                  // a client certificate signed by ca
  std::string foreign_client, foreign_client_key;  // signed by other_ca
};

// Made once per process (a few hundred ms), on first use.
const Pki& pki();

}  // namespace fairlock::test
