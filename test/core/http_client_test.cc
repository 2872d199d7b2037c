// The Beast HTTP client against real sockets: a scripted server that is well-behaved or hostile,
// and a real `openssl s_server` for HTTPS and mutual TLS.
#include "core/net/http_client.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>
#include <vector>

#include "test/support/process.h"
#include "test/support/redis_server.h"
#include "test/support/scripted_http_server.h"
#include "test/support/temp_dir.h"
#include "test/support/test_certs.h"

namespace gpuvpa {
namespace {

using testing::HttpBehaviour;
using testing::ScriptedHttpServer;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

std::shared_ptr<HttpClient> Client(HttpClientOptions o) {
  Result<std::shared_ptr<HttpClient>> c = HttpClient::Create(std::move(o));
  EXPECT_TRUE(c.ok()) << c.status().message();
  return c.ok() ? *c : nullptr;
}

std::shared_ptr<HttpClient> Client(const std::string& url) {
  HttpClientOptions o;
  o.base_url = url;
  return Client(std::move(o));
}

TEST(HttpUrlTest, ParsesHostsPortsAndIpv6Literals) {
  Result<HttpUrl> u = ParseHttpUrl("http://[::1]:18080/");
  ASSERT_TRUE(u.ok()) << u.status().message();
  EXPECT_EQ(u->host, "::1");
  EXPECT_EQ(u->port, 18080);
  EXPECT_EQ(u->path, "");
  EXPECT_EQ(u->ToString(), "http://[::1]:18080");
  u = ParseHttpUrl("https://prometheus.monitoring.svc/prom/");
  ASSERT_TRUE(u.ok());
  EXPECT_TRUE(u->tls);
  EXPECT_EQ(u->port, 443);
  EXPECT_EQ(u->path, "/prom");
  for (const char* bad :
       {"ftp://x", "http://", "http://user:pw@host/", "http://h:0", "http://h:70000",
        "http://::1:80/", "http://[::1/", "http://h/?q=1", "http://h:80x"}) {
    Result<HttpUrl> r = ParseHttpUrl(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find(bad), std::string::npos) << r.status().message();
  }
}

TEST(HttpClientTest, ReusesOneKeptAliveConnection) {
  ScriptedHttpServer server(HttpBehaviour::kOk, R"({"status":"success"})");
  auto client = Client(server.url());
  for (int i = 0; i < 5; ++i) {
    Result<HttpResponse> r =
        client->Get("/api/v1/query?query=up", Clock::now() + milliseconds(2000));
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, R"({"status":"success"})");
  }
  EXPECT_EQ(client->connections_opened(), 1u);
  EXPECT_EQ(server.connections(), 1);
  ASSERT_EQ(server.requests().size(), 5u);
  EXPECT_NE(server.requests()[0].find("GET /api/v1/query?query=up HTTP/1.1"), std::string::npos);
}

TEST(HttpClientTest, AConnectionTheServerClosedIsReplacedOnce) {
  ScriptedHttpServer server(HttpBehaviour::kOkThenClose, "ok");
  auto client = Client(server.url());
  for (int i = 0; i < 3; ++i) {
    Result<HttpResponse> r = client->Get("/", Clock::now() + milliseconds(2000));
    ASSERT_TRUE(r.ok()) << "request " << i << ": " << r.status().message();
    EXPECT_EQ(r->body, "ok");
    std::this_thread::sleep_for(milliseconds(20));  // let the close arrive
  }
  EXPECT_EQ(server.connections(), 3);
}

TEST(HttpClientTest, Ipv6LiteralAddresses) {
  ScriptedHttpServer server(HttpBehaviour::kOk, "v6", /*ipv6=*/true);
  auto client = Client(server.url());
  ASSERT_NE(client, nullptr);
  Result<HttpResponse> r = client->Get("/", Clock::now() + milliseconds(2000));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->body, "v6");
  EXPECT_NE(server.requests().at(0).find("Host: [::1]:" + std::to_string(server.port())),
            std::string::npos);
}

// Every hostile peer costs the caller at most its deadline (plus scheduling slack: this checks
// for hangs, not speed) and is an UNAVAILABLE error naming the step.
TEST(HttpClientTest, HostilePeersNeverHoldACallerPastItsDeadline) {
  struct Case {
    HttpBehaviour behaviour;
    const char* expected;
  };
  // All at once, on the one event loop, as a scaler with several hostile backends sees them.
  const std::vector<Case> cases = {
      Case{HttpBehaviour::kWrappedChunk, "read"}, Case{HttpBehaviour::kEndlessBody, "read"},
      Case{HttpBehaviour::kSlowloris, "read"}, Case{HttpBehaviour::kSilent, "read"}};
  std::vector<std::unique_ptr<ScriptedHttpServer>> servers;
  for (const Case& c : cases) servers.push_back(std::make_unique<ScriptedHttpServer>(c.behaviour));
  std::vector<Result<HttpResponse>> results(cases.size(), Result<HttpResponse>(InternalError("")));
  std::vector<Clock::duration> took(cases.size());
  std::vector<std::thread> callers;
  for (size_t i = 0; i < cases.size(); ++i)
    callers.emplace_back([&, i] {
      HttpClientOptions o;
      o.base_url = servers[i]->url();
      o.max_response_bytes = 1u << 30;  // the deadline, not the size limit, must end these
      auto client = Client(o);
      const auto start = Clock::now();
      results[i] = client->Get("/", start + milliseconds(400));
      took[i] = Clock::now() - start;
    });
  for (std::thread& t : callers) t.join();
  for (size_t i = 0; i < cases.size(); ++i) {
    const Result<HttpResponse>& r = results[i];
    ASSERT_FALSE(r.ok()) << i;
    EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
    EXPECT_NE(r.status().message().find(cases[i].expected), std::string::npos)
        << r.status().message();
    EXPECT_EQ(r.status().message().find("event loop"), std::string::npos)
        << "the loop itself must end the exchange: " << r.status().message();
    EXPECT_LT(took[i], milliseconds(2400)) << r.status().message();
  }
}

TEST(HttpClientTest, WrappedChunkSizeIsRefusedAtOnce) {
  ScriptedHttpServer server(HttpBehaviour::kWrappedChunk);
  auto client = Client(server.url());
  Result<HttpResponse> r = client->Get("/", Clock::now() + std::chrono::seconds(30));
  ASSERT_FALSE(r.ok());
  // Not the deadline: the parser rejects the size itself (beast: bad chunk / body limit).
  EXPECT_EQ(r.status().message().find("deadline"), std::string::npos) << r.status().message();
}

TEST(HttpClientTest, ResponseLargerThanTheLimitIsRefused) {
  ScriptedHttpServer server(HttpBehaviour::kEndlessBody);
  HttpClientOptions o;
  o.base_url = server.url();
  o.max_response_bytes = 1u << 20;
  auto client = Client(o);
  Result<HttpResponse> r = client->Get("/", Clock::now() + std::chrono::seconds(30));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("larger than 1048576 bytes"), std::string::npos)
      << r.status().message();
}

TEST(HttpClientTest, NothingListeningIsUnavailable) {
  const int port = testing::FreeLocalPort();
  auto client = Client("http://127.0.0.1:" + std::to_string(port));
  Result<HttpResponse> r = client->Get("/", Clock::now() + milliseconds(1000));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("connect"), std::string::npos) << r.status().message();
}

TEST(HttpClientTest, BearerTokenIsReReadWhenTheFileChanges) {
  testing::ScopedTempDir tmp;
  const std::string token_file = tmp.Path("token");
  std::ofstream(token_file) << "first-token\n";
  ScriptedHttpServer server(HttpBehaviour::kOk);
  HttpClientOptions o;
  o.base_url = server.url();
  o.bearer_token_file = token_file;
  auto client = Client(o);
  ASSERT_TRUE(client->Get("/", Clock::now() + milliseconds(2000)).ok());
  // Kubernetes swaps the projected token through a rename: a new inode.
  std::ofstream(tmp.Path("token.new")) << "second-token-longer\n";
  std::filesystem::rename(tmp.Path("token.new"), token_file);
  ASSERT_TRUE(client->Get("/", Clock::now() + milliseconds(2000)).ok());
  const std::vector<std::string> heads = server.requests();
  ASSERT_EQ(heads.size(), 2u);
  EXPECT_NE(heads[0].find("Authorization: Bearer first-token\r\n"), std::string::npos);
  EXPECT_NE(heads[1].find("Authorization: Bearer second-token-longer\r\n"), std::string::npos);
}

TEST(HttpClientTest, BasicAuthAndMissingCredentialFilesAreClearErrors) {
  testing::ScopedTempDir tmp;
  std::ofstream(tmp.Path("pw")) << "s3cret";
  ScriptedHttpServer server(HttpBehaviour::kOk);
  HttpClientOptions o;
  o.base_url = server.url();
  o.basic_auth_user = "gpuvpa";
  o.basic_auth_password_file = tmp.Path("pw");
  auto client = Client(o);
  ASSERT_TRUE(client->Get("/", Clock::now() + milliseconds(2000)).ok());
  // base64("gpuvpa:s3cret")
  EXPECT_NE(server.requests().at(0).find("Authorization: Basic Z3B1dnBhOnMzY3JldA==\r\n"),
            std::string::npos);

  o.basic_auth_password_file = tmp.Path("missing");
  Result<std::shared_ptr<HttpClient>> bad = HttpClient::Create(o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(tmp.Path("missing")), std::string::npos);
}

// HTTPS against a real `openssl s_server` serving a file.
class HttpsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    ASSERT_TRUE(testing::MakeTestCertificates(tmp_.dir().string(), &error)) << error;
    std::ofstream(tmp_.Path("hello.json")) << R"({"hello":"tls"})";
  }
  void TearDown() override { testing::KillProcess(pid_); }
  // Starts s_server; `require_client_cert` makes it demand one signed by the CA.
  void StartServer(bool require_client_cert) {
    port_ = testing::FreeLocalPort();
    std::string cmd = "cd '" + tmp_.dir().string() + "' && exec openssl s_server -quiet -WWW " +
                      "-accept 127.0.0.1:" + std::to_string(port_) +
                      " -cert server.pem -key server.key -CAfile ca.pem";
    if (require_client_cert) cmd += " -Verify 1";
    pid_ = testing::SpawnProcess({"sh", "-c", cmd}, tmp_.Path("s_server.log"));
    ASSERT_GT(pid_, 0);
    if (testing::WaitForTcpPort(port_, milliseconds(5000))) return;
    FAIL() << "openssl s_server did not start";
  }
  Result<HttpResponse> Get(HttpClientOptions o) {
    o.base_url = "https://127.0.0.1:" + std::to_string(port_);
    Result<std::shared_ptr<HttpClient>> client = HttpClient::Create(o);
    if (!client.ok()) return client.status();
    return (*client)->Get("/hello.json", Clock::now() + milliseconds(3000));
  }
  testing::ScopedTempDir tmp_;
  pid_t pid_ = -1;
  int port_ = 0;
};

TEST_F(HttpsTest, VerifiesTheServerAgainstTheCaFile) {
  StartServer(false);
  HttpClientOptions o;
  o.ca_file = tmp_.Path("ca.pem");
  Result<HttpResponse> r = Get(o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, R"({"hello":"tls"})");

  o.ca_file = tmp_.Path("other-ca.pem");  // a server this CA did not sign is refused
  r = Get(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("TLS handshake"), std::string::npos) << r.status().message();
}

TEST_F(HttpsTest, ClientCertificateForMutualTls) {
  StartServer(true);
  HttpClientOptions o;
  o.ca_file = tmp_.Path("ca.pem");
  EXPECT_FALSE(Get(o).ok());  // no client certificate: the server refuses
  o.client_cert_file = tmp_.Path("client.pem");
  o.client_key_file = tmp_.Path("client.key");
  Result<HttpResponse> r = Get(o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->body, R"({"hello":"tls"})");
}

TEST_F(HttpsTest, MissingCaFileIsAClearError) {
  HttpClientOptions o;
  o.base_url = "https://127.0.0.1:1";
  o.ca_file = tmp_.Path("no-such-ca.pem");
  Result<std::shared_ptr<HttpClient>> c = HttpClient::Create(o);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("no-such-ca.pem"), std::string::npos);
}

}  // namespace
}  // namespace gpuvpa
