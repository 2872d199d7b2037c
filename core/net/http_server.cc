// HTTP server: one io_context thread, async accept, one exchange per connection, TLS optional.
#include "core/net/http_server.h"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <chrono>
#include <thread>

#include "core/net/address_map.h"

namespace gpuvpa {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;

namespace {

constexpr auto kExchangeDeadline = std::chrono::seconds(10);

// One exchange on a plaintext (beast::tcp_stream) or TLS (ssl_stream over it) connection.
template <class Stream>
struct Session : std::enable_shared_from_this<Session<Stream>> {
  template <class... Args>
  Session(const HttpServer::RequestHandler& handler, Args&&... args)
      : stream(std::forward<Args>(args)...), handler(handler) {}

  beast::tcp_stream& tcp() { return beast::get_lowest_layer(stream); }

  void Run() {
    tcp().expires_after(kExchangeDeadline);
    if constexpr (std::is_same_v<Stream, beast::tcp_stream>) {
      Read();
    } else {
      stream.async_handshake(asio::ssl::stream_base::server,
                             [self = this->shared_from_this()](beast::error_code ec) {
                               if (!ec) self->Read();
                             });
    }
  }

  void Read() {
    parser.body_limit(4096);
    parser.header_limit(8192);
    http::async_read(
        stream, buffer, parser,
        [self = this->shared_from_this()](beast::error_code ec, size_t) { self->OnRead(ec); });
  }

  void OnRead(beast::error_code ec) {
    if (ec) return;
    const auto& request = parser.get();
    HttpServerResponse r;
    if (request.method() != http::verb::get && request.method() != http::verb::head) {
      r = {405, "text/plain; charset=utf-8", "only GET\n"};
    } else {
      HttpServerRequest in;
      in.path = std::string(request.target());
      if (const size_t q = in.path.find('?'); q != std::string::npos) {
        in.query = in.path.substr(q + 1);
        in.path.resize(q);
      }
      if (auto it = request.find(http::field::authorization); it != request.end())
        in.authorization = std::string(it->value());
      r = handler(in);
    }
    response.result(static_cast<unsigned>(r.status));
    response.version(11);
    response.set(http::field::content_type, r.content_type);
    response.set(http::field::connection, "close");
    response.body() = request.method() == http::verb::head ? std::string() : std::move(r.body);
    response.prepare_payload();
    response.keep_alive(false);
    // The handler may have run long: the write gets its own deadline.
    tcp().expires_after(kExchangeDeadline);
    http::async_write(
        stream, response,
        [self = this->shared_from_this()](beast::error_code, size_t) { self->Close(); });
  }

  void Close() {
    beast::error_code ignored;
    if constexpr (std::is_same_v<Stream, beast::tcp_stream>) {
      stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
    } else {
      stream.async_shutdown([self = this->shared_from_this()](beast::error_code) {
        beast::error_code ignored;
        self->tcp().socket().shutdown(tcp::socket::shutdown_send, ignored);
      });
    }
  }

  Stream stream;
  const HttpServer::RequestHandler& handler;
  beast::flat_buffer buffer;
  http::request_parser<http::string_body> parser;
  http::response<http::string_body> response;
};

}  // namespace

struct HttpServer::Impl {
  asio::io_context io{1};
  tcp::acceptor acceptor{io};
  RequestHandler handler;
  std::optional<asio::ssl::context> tls;
  std::thread thread;

  void Accept() {
    acceptor.async_accept([this](beast::error_code ec, tcp::socket socket) {
      if (ec == asio::error::operation_aborted) return;
      if (!ec) {
        beast::error_code ignored;
        socket.set_option(tcp::no_delay(true), ignored);  // no delayed-ACK stall per answer
        if (tls)
          std::make_shared<Session<beast::ssl_stream<beast::tcp_stream>>>(handler,
                                                                          std::move(socket), *tls)
              ->Run();
        else
          std::make_shared<Session<beast::tcp_stream>>(handler, std::move(socket))->Run();
      }
      Accept();
    });
  }
};

namespace {

Result<asio::ssl::context> TlsContext(const HttpServerTls& tls) {
  asio::ssl::context ctx(asio::ssl::context::tls_server);
  ctx.set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                  asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                  asio::ssl::context::no_tlsv1_1 | asio::ssl::context::single_dh_use);
  beast::error_code ec;
  ctx.use_certificate_chain_file(tls.cert_file, ec);
  if (ec)
    return InvalidArgumentError("TLS certificate file \"" + tls.cert_file +
                                "\" cannot be used: " + ec.message());
  ctx.use_private_key_file(tls.key_file, asio::ssl::context::pem, ec);
  if (ec)
    return InvalidArgumentError("TLS key file \"" + tls.key_file +
                                "\" cannot be used: " + ec.message());
  if (!tls.client_ca_file.empty()) {
    ctx.load_verify_file(tls.client_ca_file, ec);
    if (ec)
      return InvalidArgumentError("TLS client CA file \"" + tls.client_ca_file +
                                  "\" cannot be used: " + ec.message());
    ctx.set_verify_mode(asio::ssl::verify_peer | asio::ssl::verify_fail_if_no_peer_cert);
  }
  return ctx;
}

}  // namespace

Result<std::unique_ptr<HttpServer>> HttpServer::Start(const std::string& listen_address,
                                                      Handler handler) {
  return Start(
      listen_address,
      [handler = std::move(handler)](const HttpServerRequest& r) { return handler(r.path); },
      std::nullopt);
}

Result<std::unique_ptr<HttpServer>> HttpServer::Start(const std::string& written_address,
                                                      RequestHandler handler,
                                                      const std::optional<HttpServerTls>& tls) {
  const std::string listen_address = SocketAddress(written_address);
  const size_t colon = listen_address.rfind(':');
  if (colon == std::string::npos)
    return InvalidArgumentError("listen address \"" + listen_address + "\" is not host:port");
  std::string host = listen_address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  int port = 0;
  try {
    port = std::stoi(listen_address.substr(colon + 1));
  } catch (...) {
    port = -1;
  }
  if (port < 0 || port > 65535)
    return InvalidArgumentError("listen address \"" + listen_address + "\": bad port");
  auto impl = std::make_unique<Impl>();
  impl->handler = std::move(handler);
  if (tls) {
    Result<asio::ssl::context> ctx = TlsContext(*tls);
    if (!ctx.ok()) return ctx.status();
    impl->tls.emplace(std::move(*ctx));
  }
  beast::error_code ec;
  const asio::ip::address address = asio::ip::make_address(host.empty() ? "0.0.0.0" : host, ec);
  if (ec)
    return InvalidArgumentError("listen address \"" + listen_address + "\": \"" + host +
                                "\" is not an IP address");
  const tcp::endpoint endpoint(address, static_cast<uint16_t>(port));
  impl->acceptor.open(endpoint.protocol(), ec);
  if (!ec) impl->acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) impl->acceptor.bind(endpoint, ec);
  if (!ec) impl->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return UnavailableError("cannot listen on " + listen_address + ": " + ec.message());
  impl->Accept();
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] { raw->io.run(); });
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() {
  asio::post(impl_->io, [impl = impl_.get()] {
    beast::error_code ignored;
    impl->acceptor.close(ignored);
    impl->io.stop();
  });
  if (impl_->thread.joinable()) impl_->thread.join();
}

int HttpServer::port() const { return impl_->acceptor.local_endpoint().port(); }

}  // namespace gpuvpa
