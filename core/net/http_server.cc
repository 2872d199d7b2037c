// HTTP server: one io_context thread, async accept, one exchange per connection.
#include "core/net/http_server.h"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
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

struct Session : std::enable_shared_from_this<Session> {
  Session(tcp::socket socket, const HttpServer::Handler& handler)
      : stream(std::move(socket)), handler(handler) {}

  void Run() {
    stream.expires_after(kExchangeDeadline);
    parser.body_limit(4096);
    parser.header_limit(8192);
    http::async_read(
        stream, buffer, parser,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->OnRead(ec); });
  }

  void OnRead(beast::error_code ec) {
    if (ec) return;
    const auto& request = parser.get();
    HttpServerResponse r;
    if (request.method() != http::verb::get && request.method() != http::verb::head) {
      r = {405, "text/plain; charset=utf-8", "only GET\n"};
    } else {
      std::string path(request.target());
      if (const size_t q = path.find('?'); q != std::string::npos) path.resize(q);
      r = handler(path);
    }
    response.result(static_cast<unsigned>(r.status));
    response.version(11);
    response.set(http::field::content_type, r.content_type);
    response.set(http::field::connection, "close");
    response.body() = request.method() == http::verb::head ? std::string() : std::move(r.body);
    response.prepare_payload();
    response.keep_alive(false);
    http::async_write(stream, response, [self = shared_from_this()](beast::error_code, size_t) {
      beast::error_code ignored;
      self->stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
    });
  }

  beast::tcp_stream stream;
  const HttpServer::Handler& handler;
  beast::flat_buffer buffer;
  http::request_parser<http::string_body> parser;
  http::response<http::string_body> response;
};

}  // namespace

struct HttpServer::Impl {
  asio::io_context io{1};
  tcp::acceptor acceptor{io};
  Handler handler;
  std::thread thread;

  void Accept() {
    acceptor.async_accept([this](beast::error_code ec, tcp::socket socket) {
      if (ec == asio::error::operation_aborted) return;
      if (!ec) std::make_shared<Session>(std::move(socket), handler)->Run();
      Accept();
    });
  }
};

Result<std::unique_ptr<HttpServer>> HttpServer::Start(const std::string& written_address,
                                                      Handler handler) {
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
