#include "tls_pki.h"

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <vector>

#include "kit/child_process.h"

namespace fairlock::test {

namespace {

// Runs the openssl command with `args`; throws with its output if it fails.
void openssl(const std::vector<std::string>& args) {
  Process p(FAIRLOCK_OPENSSL_PATH, args, Pipes{false, true});
  std::string out = p.rest(std::chrono::seconds(60));
  if (p.wait() != 0) throw std::runtime_error("openssl " + args.front() + " failed: " + out);
}

// A CA of its own: key, self-signed certificate and an `openssl ca` setup
// (so that certificates can get explicit validity dates).
void make_ca(const std::string& dir, const std::string& name) {
  const std::string base = dir + "/" + name;
  std::filesystem::create_directories(base + ".db");
  std::ofstream(base + ".db/index.txt").close();
  std::ofstream(base + ".db/serial") << "01\n";
  std::ofstream(base + ".cnf") << "[ca]\ndefault_ca = c\n[c]\ndatabase = " << base << ".db/index.txt\n"
                               << "new_certs_dir = " << base << ".db\ncertificate = " << base << ".crt\n"
                               << "private_key = " << base << ".key\nserial = " << base << ".db/serial\n"
                               << "default_md = sha256\npolicy = p\nunique_subject = no\ncopy_extensions = none\n"
                               << "[p]\ncommonName = supplied\n";
  openssl({"req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "3", "-subj",
           "/CN=fairlock " + name, "-keyout", base + ".key", "-out", base + ".crt"});
}

void make_key_and_request(const std::string& key, const std::string& csr, const std::string& cn) {
  openssl({"req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-subj", "/CN=" + cn,
           "-keyout", key, "-out", csr});
}

// Signs csr with the CA `ca`, valid [from, to] (YYYYMMDDHHMMSSZ), with extensions `ext`.
void sign(const std::string& dir, const std::string& ca, const std::string& csr, const std::string& out,
          const std::string& from, const std::string& to, const std::string& ext) {
  const std::string ext_file = out + ".ext";
  std::ofstream(ext_file) << ext << "\n";
  openssl({"ca", "-batch", "-notext", "-config", dir + "/" + ca + ".cnf", "-in", csr, "-out", out, "-startdate", from,
           "-enddate", to, "-extfile", ext_file});
}

std::string days_from_now(int days) {
  std::time_t t = std::time(nullptr) + static_cast<std::time_t>(days) * 86400;
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d%H%M%SZ", std::gmtime(&t));
  return buf;
}

Pki make() {
  char tmpl[] = "/tmp/fairlock-pki-XXXXXX";
  if (!::mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
  Pki p;
  p.dir = tmpl;
  const std::string d = p.dir + "/";
  make_ca(p.dir, "ca");
  make_ca(p.dir, "other_ca");
  p.ca = d + "ca.crt";
  p.ca_key = d + "ca.key";
  p.other_ca = d + "other_ca.crt";
  p.server_key = d + "server.key";
  make_key_and_request(p.server_key, d + "server.csr", "localhost");
  const std::string names = "subjectAltName=DNS:localhost,IP:127.0.0.1";
  const std::string from = days_from_now(-1), to = days_from_now(2);
  p.server = d + "server.crt";
  sign(p.dir, "ca", d + "server.csr", p.server, from, to, names);
  p.wrong_ca = d + "wrong_ca.crt";
  sign(p.dir, "other_ca", d + "server.csr", p.wrong_ca, from, to, names);
  p.other_name = d + "other_name.crt";
  sign(p.dir, "ca", d + "server.csr", p.other_name, from, to, "subjectAltName=DNS:other.example");
  p.expired = d + "expired.crt";
  sign(p.dir, "ca", d + "server.csr", p.expired, "20200101000000Z", "20200102000000Z", names);
  p.not_yet = d + "not_yet.crt";
  sign(p.dir, "ca", d + "server.csr", p.not_yet, "20900101000000Z", "20900102000000Z", names);
  p.client = d + "client.crt";
  p.client_key = d + "client.key";
  make_key_and_request(p.client_key, d + "client.csr", "fairlock test client");
  sign(p.dir, "ca", d + "client.csr", p.client, from, to, "extendedKeyUsage=clientAuth");
  p.foreign_client = d + "foreign_client.crt";
  p.foreign_client_key = d + "foreign_client.key";
  make_key_and_request(p.foreign_client_key, d + "foreign_client.csr", "foreign client");
  sign(p.dir, "other_ca", d + "foreign_client.csr", p.foreign_client, from, to, "extendedKeyUsage=clientAuth");
  return p;
}

struct Owned {
  Owned() = default;
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  Owned(Owned&&) = delete;
  Owned& operator=(Owned&&) = delete;
  Pki pki = make();
  ~Owned() {
    std::error_code ec;
    std::filesystem::remove_all(pki.dir, ec);
  }
};

}  // namespace

const Pki& pki() {
  static Owned owned;
  return owned.pki;
}

}  // namespace fairlock::test
