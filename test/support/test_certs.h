// Certificates made by the real openssl command for TLS tests: a CA (ca.pem), a server
// certificate for 127.0.0.1, ::1 and localhost (server.pem/.key) and a client certificate
// (client.pem/.key), both signed by the CA, and an unrelated CA (other-ca.pem).
#pragma once

#include <string>

namespace gpuvpa::testing {

// Writes the files into `dir`; false with `error` (openssl's output) when openssl fails.
bool MakeTestCertificates(const std::string& dir, std::string* error);

}  // namespace gpuvpa::testing
