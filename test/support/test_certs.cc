// Test certificates through the openssl command line.
#include "test/support/test_certs.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace gpuvpa::testing {

bool MakeTestCertificates(const std::string& dir, std::string* error) {
  std::ofstream(dir + "/make-certs.sh") << R"(set -e
key='-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes'
openssl req -x509 $key -keyout ca.key -out ca.pem -days 2 -subj /CN=gpuvpa-test-ca
openssl req -x509 $key -keyout other-ca.key -out other-ca.pem -days 2 -subj /CN=other-ca
for who in server client; do
  openssl req $key -keyout $who.key -out $who.csr -subj /CN=$who
  printf 'subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost\n' > $who.ext
  openssl x509 -req -in $who.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out $who.pem \
    -days 2 -extfile $who.ext
done
for who in gpuvpa-updater gpuvpa-scaler; do
  openssl req $key -keyout $who.key -out $who.csr -subj /CN=$who
  openssl x509 -req -in $who.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out $who.pem -days 2
done
openssl req $key -keyout foreign-updater.key -out foreign-updater.csr -subj /CN=gpuvpa-updater
openssl x509 -req -in foreign-updater.csr -CA other-ca.pem -CAkey other-ca.key -CAcreateserial \
  -out foreign-updater.pem -days 2
)";
  const std::string cmd = "cd '" + dir + "' && bash make-certs.sh >openssl.log 2>&1";
  if (std::system(cmd.c_str()) == 0) return true;
  std::ifstream in(dir + "/openssl.log");
  std::stringstream s;
  s << in.rdbuf();
  *error = "openssl failed: " + s.str();
  return false;
}

}  // namespace gpuvpa::testing
