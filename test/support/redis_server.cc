// Real redis-server processes for tests.
#include "test/support/redis_server.h"

#include <arpa/inet.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "test/support/process.h"

namespace gpuvpa::testing {

RedisServer::RedisServer() : port_(FreeLocalPort()) {}

RedisServer::~RedisServer() { Kill(); }

bool RedisServer::Start(std::string* error) {
  const std::string port = std::to_string(port_);
  std::vector<std::string> args = {"redis-server",
                                   "--port",
                                   port,
                                   "--bind",
                                   "127.0.0.1",
                                   "--save",
                                   "",
                                   "--appendonly",
                                   "no",
                                   "--daemonize",
                                   "no",
                                   "--loglevel",
                                   "warning",
                                   "--enable-debug-command",
                                   "local"};  // DEBUG SLEEP: a Redis that stops answering
  pid_ = SpawnProcess(args, "/dev/null");     // its banner and log go nowhere
  if (pid_ < 0) {
    *error = "cannot start redis-server (is it installed?)";
    return false;
  }
  for (int i = 0; i < 200; ++i) {
    if (Command({"PING"}) == "PONG") return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  *error = "redis-server on port " + port + " did not answer PING";
  Kill();
  return false;
}

void RedisServer::Kill() { KillProcess(pid_); }

std::string RedisServer::Command(const std::vector<std::string>& argv) const {
  timeval timeout{1, 0};
  redisContext* c = redisConnectWithTimeout("127.0.0.1", port_, timeout);
  if (c == nullptr || c->err) {
    if (c) redisFree(c);
    return "(connection refused)";
  }
  std::vector<const char*> args;
  std::vector<size_t> lens;
  for (const std::string& a : argv) {
    args.push_back(a.data());
    lens.push_back(a.size());
  }
  auto* reply = static_cast<redisReply*>(
      redisCommandArgv(c, static_cast<int>(args.size()), args.data(), lens.data()));
  std::string out;
  if (reply == nullptr) {
    out = "(no reply)";
  } else if (reply->type == REDIS_REPLY_ERROR) {
    out = "(error) " + std::string(reply->str, reply->len);
  } else if (reply->type == REDIS_REPLY_INTEGER) {
    out = std::to_string(reply->integer);
  } else if (reply->type == REDIS_REPLY_STRING || reply->type == REDIS_REPLY_STATUS) {
    out.assign(reply->str, reply->len);
  } else {
    out = "(array)";
  }
  if (reply) freeReplyObject(reply);
  redisFree(c);
  return out;
}

namespace {
long InfoCounter(const std::string& info, const std::string& tag) {
  const size_t at = info.find(tag);
  return at == std::string::npos ? 0 : std::stol(info.substr(at + tag.size()));
}
}  // namespace

long RedisServer::CommandCalls(const std::string& command) const {
  return InfoCounter(Command({"INFO", "commandstats"}), "cmdstat_" + command + ":calls=");
}

long RedisServer::Stat(const std::string& field) const {
  return InfoCounter(Command({"INFO", "stats"}), "\n" + field + ":");
}

}  // namespace gpuvpa::testing
