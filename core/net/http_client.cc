// HTTP/1.1 client on Boost.Beast: one event-loop thread, per-exchange deadlines enforced by
// beast::tcp_stream's expiry (and a timer around name resolution), a keep-alive pool per client.
#include "core/net/http_client.h"

#include <absl/strings/escaping.h>
#include <sys/stat.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <charconv>
#include <future>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "core/base/atomic_file.h"
#include "core/net/address_map.h"

namespace gpuvpa {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using SteadyClock = std::chrono::steady_clock;
using ErrorCode = boost::system::error_code;

constexpr size_t kMaxHeaderBytes = 64 * 1024;

// The event loop every client shares: one thread, started on first use and never stopped (it
// sleeps when nothing is in flight and ends with the process).
asio::io_context& EventLoop() {
  struct Loop {
    asio::io_context io{1};
    asio::executor_work_guard<asio::io_context::executor_type> work{io.get_executor()};
    std::thread thread{[this] {
      for (;;) {
        try {
          io.run();
          return;
        } catch (...) {  // a handler never throws; if one did, the loop must go on
        }
      }
    }};
  };
  static Loop* loop = new Loop;  // never destroyed: exchanges may be in flight at exit
  return loop->io;
}

bool IsIpLiteral(const std::string& host) {
  ErrorCode ec;
  (void)asio::ip::make_address(host, ec);
  return !ec;
}

// A credential file, re-read when it changes (Kubernetes swaps projected token files through a
// symlink): identity is device, inode, size and modification time.
class SecretFile {
 public:
  SecretFile(std::string option, std::string path)
      : option_(std::move(option)), path_(std::move(path)) {}

  Result<std::string> Get() {
    struct stat st {};
    if (::stat(path_.c_str(), &st) != 0)
      return UnavailableError(option_ + " " + path_ + " cannot be read");
    std::lock_guard<std::mutex> lock(mu_);
    if (loaded_ && st.st_dev == seen_.st_dev && st.st_ino == seen_.st_ino &&
        st.st_size == seen_.st_size && st.st_mtim.tv_sec == seen_.st_mtim.tv_sec &&
        st.st_mtim.tv_nsec == seen_.st_mtim.tv_nsec)
      return value_;
    Result<std::string> text = ReadWholeFile(path_);
    if (!text.ok()) return UnavailableError(option_ + " " + path_ + " cannot be read");
    std::string value = std::move(text).value();
    while (!value.empty() && (value.back() == '\n' || value.back() == '\r' || value.back() == ' ' ||
                              value.back() == '\t'))
      value.pop_back();
    if (value.empty()) return UnavailableError(option_ + " " + path_ + " is empty");
    if (value.find_first_of("\r\n") != std::string::npos)
      return UnavailableError(option_ + " " + path_ + " holds more than one line");
    value_ = std::move(value);
    seen_ = st;
    loaded_ = true;
    return value_;
  }

 private:
  const std::string option_;
  const std::string path_;
  std::mutex mu_;
  bool loaded_ = false;
  struct stat seen_ {};
  std::string value_;
};

struct Connection {
  Connection(asio::io_context& io, ssl::context& tls) : stream(io, tls) {}
  beast::tcp_stream& tcp() { return stream.next_layer(); }
  beast::ssl_stream<beast::tcp_stream> stream;  // its TLS layer is used only for https
  SteadyClock::time_point idle_since;
};

// A reused keep-alive connection the server has closed in the meantime fails this way.
bool IsStaleConnection(const ErrorCode& ec) {
  return ec == http::error::end_of_stream || ec == asio::error::eof ||
         ec == asio::error::connection_reset || ec == asio::error::broken_pipe ||
         ec == asio::error::connection_aborted || ec == ssl::error::stream_truncated;
}

}  // namespace

std::string HttpUrl::ToString() const {
  const bool v6 = host.find(':') != std::string::npos;
  return std::string(tls ? "https://" : "http://") + (v6 ? "[" + host + "]" : host) + ":" +
         std::to_string(port) + path;
}

Result<HttpUrl> ParseHttpUrl(std::string_view url) {
  auto bad = [&](std::string_view why) {
    return InvalidArgumentError("URL \"" + std::string(url) + "\" " + std::string(why));
  };
  HttpUrl u;
  std::string_view rest = url;
  if (rest.starts_with("https://")) {
    u.tls = true;
    rest.remove_prefix(8);
  } else if (rest.starts_with("http://")) {
    rest.remove_prefix(7);
  } else {
    return bad("is not an http:// or https:// URL");
  }
  const size_t slash = rest.find_first_of("/?#");
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? "" : rest.substr(slash);
  if (authority.find('@') != std::string_view::npos)
    return bad("holds user-info; give credentials as files instead");
  if (!path.empty() && path.front() != '/') return bad("has a query or fragment but no path");
  if (path.find_first_of("?# \r\n\t") != std::string_view::npos)
    return bad("must be a base URL without query, fragment or spaces");
  std::string_view port_text;
  if (authority.starts_with("[")) {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return bad("has an unclosed IPv6 bracket");
    u.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return bad("has text after the IPv6 address");
      port_text = after.substr(1);
    }
    if (!IsIpLiteral(u.host)) return bad("has an invalid IPv6 address");
  } else {
    const size_t colon = authority.rfind(':');
    u.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port_text = authority.substr(colon + 1);
    if (u.host.find(':') != std::string::npos) return bad("has an IPv6 address without brackets");
  }
  if (u.host.empty()) return bad("has no host");
  for (char c : u.host)
    if (static_cast<unsigned char>(c) <= ' ' || c == '/' || c == '\\' || c == '%')
      return bad("has an invalid host");
  u.port = u.tls ? 443 : 80;
  if (!port_text.empty() || authority.ends_with(":")) {
    unsigned port = 0;
    auto [p, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (ec != std::errc() || p != port_text.data() + port_text.size() || port == 0 || port > 65535)
      return bad("has an invalid port");
    u.port = static_cast<uint16_t>(port);
  }
  u.path = std::string(path);
  while (!u.path.empty() && u.path.back() == '/') u.path.pop_back();
  return u;
}

struct HttpClient::Impl {
  HttpClientOptions options;
  HttpUrl url;
  std::string host_header;
  ssl::context tls{ssl::context::tls_client};
  std::optional<SecretFile> bearer;
  std::optional<SecretFile> basic_password;
  mutable std::mutex mu;  // guards the pool and the counter
  std::vector<std::unique_ptr<Connection>> idle;
  uint64_t opened = 0;

  std::unique_ptr<Connection> TakeIdle() {
    std::lock_guard<std::mutex> lock(mu);
    const auto now = SteadyClock::now();
    while (!idle.empty()) {
      std::unique_ptr<Connection> c = std::move(idle.back());
      idle.pop_back();
      if (now - c->idle_since < options.idle_timeout) return c;
    }
    return nullptr;
  }
  void PutIdle(std::unique_ptr<Connection> c) {
    c->idle_since = SteadyClock::now();
    std::lock_guard<std::mutex> lock(mu);
    if (idle.size() < options.max_idle_connections) idle.push_back(std::move(c));
  }
  std::unique_ptr<Connection> NewConnection() {
    std::lock_guard<std::mutex> lock(mu);
    ++opened;
    return std::make_unique<Connection>(EventLoop(), tls);
  }
};

namespace {

// One request/response exchange; every step runs on the event loop and every step is bounded
// by the same deadline. A reused connection found closed is replaced once by a fresh one.
class Exchange : public std::enable_shared_from_this<Exchange> {
 public:
  Exchange(std::shared_ptr<HttpClient::Impl> client, http::request<http::string_body> request,
           SteadyClock::time_point deadline, std::string what)
      : client_(std::move(client)),
        request_(std::move(request)),
        deadline_(deadline),
        what_(std::move(what)),
        resolver_(EventLoop()),
        timer_(EventLoop()) {}

  std::future<Result<HttpResponse>> Answer() { return promise_.get_future(); }

  void Start() {
    conn_ = client_->TakeIdle();
    if (conn_ == nullptr) return Open();
    reused_ = true;
    Write();
  }

 private:
  bool tls() const { return client_->url.tls; }

  void Fail(std::string_view step, const ErrorCode& ec) {
    conn_.reset();  // closes the socket; never returned to the pool
    std::string why = ec == beast::error::timeout || ec == asio::error::operation_aborted
                          ? "no answer within the deadline"
                      : ec == http::error::body_limit
                          ? "response body larger than " +
                                std::to_string(client_->options.max_response_bytes) + " bytes"
                          : ec.message();
    promise_.set_value(UnavailableError(what_ + ": " + std::string(step) + ": " + why));
  }

  void Open() {
    reused_ = false;
    conn_ = client_->NewConnection();
    timer_.expires_at(deadline_);
    timer_.async_wait([self = shared_from_this()](const ErrorCode& ec) {
      if (!ec) self->resolver_.cancel();
    });
    const SocketTarget target = SocketAddress(client_->url.host, client_->url.port);
    resolver_.async_resolve(
        target.host, target.port,
        [self = shared_from_this()](const ErrorCode& ec, tcp::resolver::results_type results) {
          self->timer_.cancel();
          if (ec) return self->Fail("resolve " + self->client_->url.host, ec);
          self->Connect(results);
        });
  }

  void Connect(const tcp::resolver::results_type& results) {
    conn_->tcp().expires_at(deadline_);
    conn_->tcp().async_connect(
        results, [self = shared_from_this()](const ErrorCode& ec, const tcp::endpoint&) {
          if (ec) return self->Fail("connect", ec);
          // As Go's net package does for every TCP connection: without it, the last segment
          // of a request or answer waits on the peer's delayed ACK (~40 ms per exchange).
          ErrorCode ignored;
          self->conn_->tcp().socket().set_option(tcp::no_delay(true), ignored);
          if (self->tls()) return self->Handshake();
          self->Write();
        });
  }

  void Handshake() {
    const std::string& host = client_->url.host;
    if (!IsIpLiteral(host)) SSL_set_tlsext_host_name(conn_->stream.native_handle(), host.c_str());
    if (client_->options.verify_peer)
      conn_->stream.set_verify_callback(ssl::host_name_verification(host));
    conn_->tcp().expires_at(deadline_);
    conn_->stream.async_handshake(ssl::stream_base::client,
                                  [self = shared_from_this()](const ErrorCode& ec) {
                                    if (ec) return self->Fail("TLS handshake", ec);
                                    self->Write();
                                  });
  }

  void Write() {
    conn_->tcp().expires_at(deadline_);
    auto done = [self = shared_from_this()](const ErrorCode& ec, size_t) {
      if (ec) return self->RetryOrFail("send", ec);
      self->Read();
    };
    if (tls())
      http::async_write(conn_->stream, request_, std::move(done));
    else
      http::async_write(conn_->tcp(), request_, std::move(done));
  }

  void Read() {
    parser_.emplace();
    parser_->body_limit(client_->options.max_response_bytes);
    parser_->header_limit(kMaxHeaderBytes);
    conn_->tcp().expires_at(deadline_);
    ReadSome();
  }

  // One read at a time, with the deadline checked between reads as well as by the stream's
  // expiry: a peer that always has more bytes ready keeps the socket readable and could
  // otherwise hold the exchange in a tight loop of immediate completions.
  void ReadSome() {
    auto done = [self = shared_from_this()](const ErrorCode& ec, size_t) {
      if (ec) return self->RetryOrFail("read", ec);
      if (self->parser_->is_done()) return self->Done();
      if (SteadyClock::now() >= self->deadline_) return self->Fail("read", beast::error::timeout);
      self->ReadSome();
    };
    if (tls())
      http::async_read_some(conn_->stream, buffer_, *parser_, std::move(done));
    else
      http::async_read_some(conn_->tcp(), buffer_, *parser_, std::move(done));
  }

  void RetryOrFail(std::string_view step, const ErrorCode& ec) {
    const bool nothing_read = !parser_ || !parser_->got_some();
    if (reused_ && nothing_read && IsStaleConnection(ec) && SteadyClock::now() < deadline_) {
      conn_.reset();
      buffer_.clear();
      parser_.reset();
      return Open();
    }
    Fail(step, ec);
  }

  void Done() {
    http::response<http::string_body>& res = parser_->get();
    HttpResponse r;
    r.status = static_cast<int>(res.result_int());
    r.content_type = std::string(res[http::field::content_type]);
    r.retry_after = std::string(res[http::field::retry_after]);
    const bool reusable = res.keep_alive() && buffer_.size() == 0;
    r.body = std::move(res.body());
    if (reusable) {
      conn_->tcp().expires_never();
      client_->PutIdle(std::move(conn_));
    }
    conn_.reset();
    promise_.set_value(std::move(r));
  }

  std::shared_ptr<HttpClient::Impl> client_;
  http::request<http::string_body> request_;
  const SteadyClock::time_point deadline_;
  const std::string what_;
  tcp::resolver resolver_;
  asio::steady_timer timer_;
  std::unique_ptr<Connection> conn_;
  bool reused_ = false;
  beast::flat_buffer buffer_;
  std::optional<http::response_parser<http::string_body>> parser_;
  std::promise<Result<HttpResponse>> promise_;
};

}  // namespace

HttpClient::HttpClient(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpClient::~HttpClient() {
  // Idle connections belong to the event loop: close them there.
  asio::post(EventLoop(), [impl = std::move(impl_)]() mutable {
    std::lock_guard<std::mutex> lock(impl->mu);
    impl->idle.clear();
  });
}

Result<std::shared_ptr<HttpClient>> HttpClient::Create(HttpClientOptions options) {
  Result<HttpUrl> url = ParseHttpUrl(options.base_url);
  if (!url.ok()) return url.status();
  auto impl = std::make_shared<Impl>();
  impl->url = std::move(url).value();
  const bool v6 = impl->url.host.find(':') != std::string::npos;
  impl->host_header = v6 ? "[" + impl->url.host + "]" : impl->url.host;
  if (impl->url.port != (impl->url.tls ? 443 : 80))
    impl->host_header += ":" + std::to_string(impl->url.port);
  const bool has_bearer = !options.bearer_token_file.empty() || !options.bearer_token.empty();
  if (has_bearer && !options.basic_auth_user.empty())
    return InvalidArgumentError("give a bearer token or basic auth for " + impl->url.ToString() +
                                ", not both");
  if (!options.bearer_token_file.empty() && !options.bearer_token.empty())
    return InvalidArgumentError("give a bearer token file or a token for " + impl->url.ToString() +
                                ", not both");
  if (options.bearer_token.find_first_of("\r\n") != std::string::npos)
    return InvalidArgumentError("the bearer token for " + impl->url.ToString() +
                                " holds a line break");
  if ((!options.ca_file.empty() && !options.ca_pem.empty()) ||
      (!options.client_cert_file.empty() && !options.client_cert_pem.empty()) ||
      (!options.client_key_file.empty() && !options.client_key_pem.empty()))
    return InvalidArgumentError("TLS material for " + impl->url.ToString() +
                                " is given both as a file and in memory");
  if (options.basic_auth_user.empty() != options.basic_auth_password_file.empty())
    return InvalidArgumentError("basic auth for " + impl->url.ToString() +
                                " needs both a user and a password file");
  if (options.max_response_bytes == 0)
    return InvalidArgumentError("max_response_bytes must be positive");
  if (!options.bearer_token_file.empty()) {
    impl->bearer.emplace("bearer token file", options.bearer_token_file);
    if (Result<std::string> t = impl->bearer->Get(); !t.ok())
      return InvalidArgumentError(t.status().message());
  }
  if (!options.basic_auth_password_file.empty()) {
    impl->basic_password.emplace("basic auth password file", options.basic_auth_password_file);
    if (Result<std::string> t = impl->basic_password->Get(); !t.ok())
      return InvalidArgumentError(t.status().message());
  }
  ErrorCode ec;
  impl->tls.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                            ssl::context::no_sslv3 | ssl::context::no_tlsv1 |
                            ssl::context::no_tlsv1_1,
                        ec);
  if (options.verify_peer) {
    impl->tls.set_verify_mode(ssl::verify_peer, ec);
    if (!options.ca_pem.empty()) {
      impl->tls.add_certificate_authority(asio::buffer(options.ca_pem), ec);
      if (ec)
        return InvalidArgumentError("the CA data for " + impl->url.ToString() +
                                    " cannot be loaded: " + ec.message());
    } else if (!options.ca_file.empty()) {
      impl->tls.load_verify_file(options.ca_file, ec);
      if (ec)
        return InvalidArgumentError("CA file " + options.ca_file +
                                    " cannot be loaded: " + ec.message());
    } else {
      impl->tls.set_default_verify_paths(ec);
    }
  } else {
    impl->tls.set_verify_mode(ssl::verify_none, ec);
  }
  if (!options.client_cert_pem.empty() || !options.client_key_pem.empty()) {
    if (options.client_cert_pem.empty() || options.client_key_pem.empty())
      return InvalidArgumentError("a client certificate for " + impl->url.ToString() +
                                  " needs both certificate data and key data");
    impl->tls.use_certificate_chain(asio::buffer(options.client_cert_pem), ec);
    if (ec)
      return InvalidArgumentError("the client certificate data for " + impl->url.ToString() +
                                  " cannot be loaded: " + ec.message());
    impl->tls.use_private_key(asio::buffer(options.client_key_pem), ssl::context::pem, ec);
    if (ec)
      return InvalidArgumentError("the client key data for " + impl->url.ToString() +
                                  " cannot be loaded (or does not match the certificate)");
  }
  if (options.client_cert_file.empty() != options.client_key_file.empty())
    return InvalidArgumentError("a client certificate for " + impl->url.ToString() +
                                " needs both a certificate file and a key file");
  if (!options.client_cert_file.empty()) {
    impl->tls.use_certificate_chain_file(options.client_cert_file, ec);
    if (ec)
      return InvalidArgumentError("client certificate file " + options.client_cert_file +
                                  " cannot be loaded: " + ec.message());
    impl->tls.use_private_key_file(options.client_key_file, ssl::context::pem, ec);
    if (ec)
      return InvalidArgumentError("client key file " + options.client_key_file +
                                  " cannot be loaded (or does not match the certificate)");
  }
  impl->options = std::move(options);
  return std::shared_ptr<HttpClient>(new HttpClient(std::move(impl)));
}

const HttpUrl& HttpClient::url() const { return impl_->url; }

uint64_t HttpClient::connections_opened() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->opened;
}

size_t HttpClient::idle_connections() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->idle.size();
}

Result<HttpResponse> HttpClient::Get(std::string_view target, Deadline deadline) {
  return Send("GET", target, {}, {}, deadline);
}

Result<HttpResponse> HttpClient::Send(std::string_view method, std::string_view target,
                                      std::string_view body, std::string_view content_type,
                                      Deadline deadline) {
  const http::verb verb = http::string_to_verb(beast::string_view(method.data(), method.size()));
  if (verb == http::verb::unknown)
    return InvalidArgumentError("HTTP method \"" + std::string(method) + "\" is unknown");
  if (!target.starts_with('/') || target.find_first_of(" \r\n\t") != std::string_view::npos)
    return InvalidArgumentError("HTTP target \"" + std::string(target) +
                                "\" must start with '/' and hold no spaces or line breaks");
  const std::string full_target = impl_->url.path + std::string(target);
  const std::string what = std::string(method) + " " + impl_->url.ToString() +
                           std::string(target.substr(0, target.find('?')));
  http::request<http::string_body> request{verb, full_target, 11};
  request.set(http::field::host, impl_->host_header);
  request.set(http::field::user_agent, "gpuvpa");
  request.set(http::field::accept, "application/json");
  if (!impl_->options.bearer_token.empty()) {
    request.set(http::field::authorization, "Bearer " + impl_->options.bearer_token);
  } else if (impl_->bearer) {
    Result<std::string> token = impl_->bearer->Get();
    if (!token.ok())
      return Status(StatusCode::kUnavailable, what + ": " + token.status().message());
    request.set(http::field::authorization, "Bearer " + *token);
  } else if (impl_->basic_password) {
    Result<std::string> password = impl_->basic_password->Get();
    if (!password.ok())
      return Status(StatusCode::kUnavailable, what + ": " + password.status().message());
    request.set(http::field::authorization,
                "Basic " + absl::Base64Escape(impl_->options.basic_auth_user + ":" + *password));
  }
  if (!body.empty() || verb != http::verb::get) {
    request.body() = std::string(body);
    if (!content_type.empty()) request.set(http::field::content_type, std::string(content_type));
    request.prepare_payload();
  }
  if (SteadyClock::now() >= deadline) return UnavailableError(what + ": deadline already passed");
  auto exchange = std::make_shared<Exchange>(impl_, std::move(request), deadline, what);
  std::future<Result<HttpResponse>> answer = exchange->Answer();
  asio::post(EventLoop(), [exchange] { exchange->Start(); });
  // The loop enforces the deadline; the slack only guards against a loop that is itself late.
  if (answer.wait_until(deadline + std::chrono::seconds(1)) != std::future_status::ready)
    return UnavailableError(what + ": no answer within the deadline (event loop busy)");
  return answer.get();
}

Result<HttpResponse> HttpGet(std::string_view url, std::chrono::milliseconds timeout) {
  // Split the absolute URL into base (scheme + authority) and target.
  const size_t scheme_end = url.find("://");
  const size_t target_start =
      scheme_end == std::string_view::npos ? std::string_view::npos : url.find('/', scheme_end + 3);
  const std::string_view base = url.substr(0, target_start);
  const std::string_view target =
      target_start == std::string_view::npos ? std::string_view("/") : url.substr(target_start);
  HttpClientOptions options;
  options.base_url = std::string(base);
  Result<std::shared_ptr<HttpClient>> client = HttpClient::Create(std::move(options));
  if (!client.ok()) return client.status();
  return (*client)->Get(target, SteadyClock::now() + timeout);
}

std::string UrlEncode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size() * 3);
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

}  // namespace gpuvpa
