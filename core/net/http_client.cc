// Minimal blocking HTTP/1.1 client (Connection: close), with poll()-based deadlines.
#include "core/net/http_client.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <memory>

namespace gpuvpa {
namespace {

using Clock = std::chrono::steady_clock;

int RemainingMs(Clock::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left > 0 ? static_cast<int>(left) : 0;
}

// Waits until `fd` is ready for `events` or the deadline passes.
bool WaitFor(int fd, short events, Clock::time_point deadline) {
  pollfd p{fd, events, 0};
  for (;;) {
    const int rc = ::poll(&p, 1, RemainingMs(deadline));
    if (rc > 0) return true;
    if (rc == 0 || errno != EINTR) return false;
  }
}

class Socket {
 public:
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket() {
    if (fd_ >= 0) ::close(fd_);
  }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

std::string UrlEncode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
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

Result<HttpResponse> HttpGet(std::string_view url, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  const std::string where(url);
  if (url.starts_with("https://"))
    return InvalidArgumentError("URL \"" + where +
                                "\": https is not supported by this build's HTTP client");
  if (!url.starts_with("http://"))
    return InvalidArgumentError("URL \"" + where + "\" is not http://host[:port]/path");
  std::string_view rest = url.substr(7);
  const size_t slash = rest.find('/');
  const std::string_view authority = rest.substr(0, slash);
  const std::string path = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
  std::string host(authority);
  std::string port = "80";
  if (const size_t colon = authority.rfind(':'); colon != std::string_view::npos) {
    host = std::string(authority.substr(0, colon));
    port = std::string(authority.substr(colon + 1));
  }
  if (host.empty()) return InvalidArgumentError("URL \"" + where + "\" has no host");

  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* addrs = nullptr;
  if (const int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &addrs); rc != 0)
    return UnavailableError(where + ": cannot resolve " + host + ": " + gai_strerror(rc));
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> addr_guard(addrs, &::freeaddrinfo);
  std::string last_error = "no address";
  for (addrinfo* a = addrs; a != nullptr; a = a->ai_next) {
    Socket sock(
        ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol));
    if (sock.fd() < 0) continue;
    if (::connect(sock.fd(), a->ai_addr, a->ai_addrlen) != 0) {
      if (errno != EINPROGRESS || !WaitFor(sock.fd(), POLLOUT, deadline)) {
        last_error = errno == EINPROGRESS ? "connect timed out" : std::strerror(errno);
        continue;
      }
      int err = 0;
      socklen_t len = sizeof err;
      ::getsockopt(sock.fd(), SOL_SOCKET, SO_ERROR, &err, &len);
      if (err != 0) {
        last_error = std::strerror(err);
        continue;
      }
    }
    const std::string request = "GET " + path + " HTTP/1.1\r\nHost: " + std::string(authority) +
                                "\r\nAccept: application/json\r\nConnection: close\r\n\r\n";
    for (size_t sent = 0; sent < request.size();) {
      if (!WaitFor(sock.fd(), POLLOUT, deadline))
        return UnavailableError(where + ": send timed out");
      const ssize_t n =
          ::send(sock.fd(), request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
      if (n < 0 && errno != EAGAIN && errno != EINTR)
        return UnavailableError(where + ": send: " + std::strerror(errno));
      if (n > 0) sent += static_cast<size_t>(n);
    }
    std::string raw;
    char buf[16384];
    for (;;) {
      if (!WaitFor(sock.fd(), POLLIN, deadline))
        return UnavailableError(where + ": no answer within the timeout");
      const ssize_t n = ::recv(sock.fd(), buf, sizeof buf, 0);
      if (n == 0) break;
      if (n < 0) {
        if (errno == EAGAIN || errno == EINTR) continue;
        return UnavailableError(where + ": recv: " + std::strerror(errno));
      }
      raw.append(buf, static_cast<size_t>(n));
    }
    // Status line, headers, body (Connection: close ends the body; chunked is decoded below).
    const size_t header_end = raw.find("\r\n\r\n");
    if (!raw.starts_with("HTTP/1.") || header_end == std::string::npos || raw.size() < 12)
      return UnavailableError(where + ": malformed HTTP response");
    HttpResponse response;
    std::from_chars(raw.data() + 9, raw.data() + 12, response.status);
    std::string headers = raw.substr(0, header_end);
    for (char& c : headers) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string body = raw.substr(header_end + 4);
    if (headers.find("transfer-encoding: chunked") != std::string::npos) {
      std::string decoded;
      size_t pos = 0;
      for (;;) {
        const size_t eol = body.find("\r\n", pos);
        if (eol == std::string::npos) return UnavailableError(where + ": truncated chunked body");
        size_t size = 0;
        std::from_chars(body.data() + pos, body.data() + eol, size, 16);
        if (size == 0) break;
        if (eol + 2 + size > body.size())
          return UnavailableError(where + ": truncated chunked body");
        decoded.append(body, eol + 2, size);
        pos = eol + 2 + size + 2;
      }
      body = std::move(decoded);
    }
    response.body = std::move(body);
    return response;
  }
  return UnavailableError(where + ": cannot connect: " + last_error);
}

}  // namespace gpuvpa
