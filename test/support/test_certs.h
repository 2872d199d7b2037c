// Certificates made by the real openssl command for TLS tests: a CA (ca.pem), a server
// certificate for 127.0.0.1, ::1 and localhost (server.pem/.key) and a client certificate
// (client.pem/.key, CN client: what KEDA would hold), both signed by the CA; the components'
// client certificates with the names make-secrets.sh gives them (gpuvpa-updater.pem/.key,
// gpuvpa-scaler.pem/.key); an unrelated CA (other-ca.pem) and a client certificate it signed
// naming the updater (foreign-updater.pem/.key).
#pragma once

#include <string>

namespace gpuvpa::testing {

// Writes the files into `dir`; false with `error` (openssl's output) when openssl fails.
bool MakeTestCertificates(const std::string& dir, std::string* error);

}  // namespace gpuvpa::testing
