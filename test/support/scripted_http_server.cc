// Scripted HTTP server: one thread per connection, all stopped and joined on destruction.
#include "test/support/scripted_http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

#include "test/support/sockets.h"

namespace gpuvpa::testing {
namespace {

bool SendAll(int fd, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    const ssize_t n = ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

ScriptedHttpServer::ScriptedHttpServer(HttpBehaviour behaviour, std::string body, bool ipv6)
    : behaviour_(behaviour), body_(std::move(body)), ipv6_(ipv6) {
  listen_fd_ = ListenOnLoopback(&port_, ipv6);
  acceptor_ = std::thread([this] {
    while (!stopping_) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      const int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) continue;
      ++connections_;
      std::lock_guard<std::mutex> lock(mu_);
      open_fds_.push_back(fd);
      threads_.emplace_back([this, fd] { Serve(fd); });
    }
  });
}

ScriptedHttpServer::~ScriptedHttpServer() {
  stopping_ = true;
  acceptor_.join();
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int fd : open_fds_) ::shutdown(fd, SHUT_RDWR);
  }
  for (std::thread& t : threads_) t.join();
  for (int fd : open_fds_) ::close(fd);
  ::close(listen_fd_);
}

std::string ScriptedHttpServer::url() const {
  return (ipv6_ ? "http://[::1]:" : "http://127.0.0.1:") + std::to_string(port_);
}

std::vector<std::string> ScriptedHttpServer::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

void ScriptedHttpServer::SetBodyFor(const std::string& target_prefix, std::string body) {
  std::lock_guard<std::mutex> lock(mu_);
  bodies_.emplace_back(target_prefix, std::move(body));
}

void ScriptedHttpServer::Serve(int fd) {
  std::string pending;
  char buf[4096];
  // Reads until `enough` holds for `pending`; false when the peer left or the server stops.
  auto read_until = [&](auto&& enough) {
    while (!enough()) {
      pollfd p{fd, POLLIN, 0};
      if (stopping_) return false;
      if (::poll(&p, 1, 50) <= 0) continue;
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) return false;
      pending.append(buf, static_cast<size_t>(n));
    }
    return true;
  };
  while (!stopping_) {
    // One request head, then the body its Content-Length announces (kept for bodies()).
    if (!read_until([&] { return pending.find("\r\n\r\n") != std::string::npos; })) return;
    const size_t end = pending.find("\r\n\r\n");
    const std::string head = pending.substr(0, end + 4);
    pending.erase(0, end + 4);
    size_t length = 0;
    for (const char* name : {"Content-Length: ", "content-length: "})
      if (const size_t at = head.find(name); at != std::string::npos)
        length = std::strtoul(head.c_str() + at + std::strlen(name), nullptr, 10);
    if (!read_until([&] { return pending.size() >= length; })) return;
    const std::string request_body = pending.substr(0, length);
    pending.erase(0, length);
    std::string body = body_;
    {
      std::lock_guard<std::mutex> lock(mu_);
      requests_.push_back(head);
      received_bodies_.push_back(request_body);
      // "GET /target HTTP/1.1": the target starts after the method.
      const size_t space = head.find(' ');
      const std::string target = space == std::string::npos ? "" : head.substr(space + 1);
      size_t longest = 0;
      for (const auto& [prefix, b] : bodies_)
        if (target.rfind(prefix, 0) == 0 && prefix.size() >= longest) {
          longest = prefix.size();
          body = b;
        }
    }
    switch (behaviour_.load()) {
      case HttpBehaviour::kOk:
      case HttpBehaviour::kOkThenClose:
        if (!SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
                             std::to_string(body.size()) + "\r\n\r\n" + body))
          return;
        if (behaviour_ == HttpBehaviour::kOkThenClose) {
          ::shutdown(fd, SHUT_RDWR);
          return;
        }
        continue;
      case HttpBehaviour::kStatus:
        if (!SendAll(fd, "HTTP/1.1 " + std::to_string(status_.load()) +
                             " Scripted\r\nContent-Type: text/plain\r\nContent-Length: " +
                             std::to_string(body.size()) + "\r\n\r\n" + body))
          return;
        continue;
      case HttpBehaviour::kTooManyRequests:
        if (!SendAll(fd,
                     "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 0\r\nContent-Type: "
                     "application/json\r\nContent-Length: " +
                         std::to_string(body_.size()) + "\r\n\r\n" + body_))
          return;
        continue;
      case HttpBehaviour::kWrappedChunk:
        SendAll(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFEC\r\nab");
        break;
      case HttpBehaviour::kEndlessBody: {
        if (!SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: 999999999999\r\n\r\n")) return;
        const std::string block(64 * 1024, 'x');
        while (!stopping_ && SendAll(fd, block)) {
        }
        return;
      }
      case HttpBehaviour::kSlowloris: {
        const std::string line = "HTTP/1.1 200 OK\r\nX-Slow: ";
        for (size_t i = 0; !stopping_; ++i) {
          if (!SendAll(fd, std::string(1, i < line.size() ? line[i] : 'z'))) return;
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        return;
      }
      case HttpBehaviour::kSilent:
        break;
    }
    // Hold the connection open, saying nothing more, until the client leaves or we stop.
    while (!stopping_) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 50) > 0 && ::recv(fd, buf, sizeof buf, 0) <= 0) return;
    }
    return;
  }
}

}  // namespace gpuvpa::testing

namespace gpuvpa::testing {

std::vector<std::string> ScriptedHttpServer::bodies() const {
  std::lock_guard<std::mutex> lock(mu_);
  return received_bodies_;
}

}  // namespace gpuvpa::testing
