// Redis source over hiredis (synchronous, with connect and command timeouts).
#include "scaler/sources/redis_source.h"

#include <hiredis/hiredis.h>

#include <memory>

namespace gpuvpa::scaler {
namespace {

struct ReplyDeleter {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using Reply = std::unique_ptr<redisReply, ReplyDeleter>;

timeval ToTimeval(std::chrono::milliseconds ms) {
  return {static_cast<time_t>(ms.count() / 1000),
          static_cast<suseconds_t>((ms.count() % 1000) * 1000)};
}

// Field `name` of a flat key/value array reply (XINFO GROUPS entries).
const redisReply* Field(const redisReply* map, std::string_view name) {
  for (size_t i = 0; i + 1 < map->elements; i += 2) {
    const redisReply* k = map->element[i];
    if (k->type == REDIS_REPLY_STRING && std::string_view(k->str, k->len) == name)
      return map->element[i + 1];
  }
  return nullptr;
}

// Why a command failed: the server's error text, an unexpected reply type, or the connection's
// error when there was no reply at all.
std::string ErrorText(const redisReply* reply, const redisContext* ctx) {
  if (reply == nullptr) return ctx->errstr;
  if (reply->str != nullptr) return std::string(reply->str, reply->len);
  return "unexpected reply type " + std::to_string(reply->type);
}

}  // namespace

RedisQueueSource::RedisQueueSource(RedisSourceConfig config, std::chrono::milliseconds timeout,
                                   std::string password)
    : config_(std::move(config)), timeout_(timeout), password_(std::move(password)) {}

RedisQueueSource::~RedisQueueSource() { DropConnectionLocked(); }

std::string RedisQueueSource::Describe() const {
  static constexpr const char* kTypes[] = {"list", "stream", "zset"};
  return "redis://" + config_.host + ":" + std::to_string(config_.port) + "/" +
         std::to_string(config_.database_index) + " " +
         kTypes[static_cast<int>(config_.data_type)] + " " + config_.key +
         (config_.consumer_group.empty() ? "" : " group " + config_.consumer_group);
}

void RedisQueueSource::DropConnectionLocked() {
  if (ctx_ != nullptr) redisFree(ctx_);
  ctx_ = nullptr;
}

Status RedisQueueSource::ConnectLocked() {
  ctx_ = redisConnectWithTimeout(config_.host.c_str(), config_.port, ToTimeval(timeout_));
  if (ctx_ == nullptr || ctx_->err) {
    const std::string why = ctx_ ? ctx_->errstr : "out of memory";
    DropConnectionLocked();
    return UnavailableError(Describe() + ": connect: " + why);
  }
  redisSetTimeout(ctx_, ToTimeval(timeout_));
  auto command = [&](const std::string& what, Reply reply) -> Status {
    if (!reply || reply->type == REDIS_REPLY_ERROR) {
      const std::string why = ErrorText(reply.get(), ctx_);
      DropConnectionLocked();
      return UnavailableError(Describe() + ": " + what + ": " + why);
    }
    return OkStatus();
  };
  if (!password_.empty()) {
    // The password never appears in an error or a log line.
    GPUVPA_RETURN_IF_ERROR(command(
        "AUTH", Reply(static_cast<redisReply*>(redisCommand(ctx_, "AUTH %s", password_.c_str())))));
  }
  if (config_.database_index != 0) {
    GPUVPA_RETURN_IF_ERROR(command("SELECT", Reply(static_cast<redisReply*>(redisCommand(
                                                 ctx_, "SELECT %d", config_.database_index)))));
  }
  return OkStatus();
}

Result<double> RedisQueueSource::QueryLocked() {
  auto run = [&](const char* format, auto... args) {
    return Reply(static_cast<redisReply*>(redisCommand(ctx_, format, args...)));
  };
  auto failed = [&](const Reply& reply, const char* what) -> Status {
    const std::string why = ErrorText(reply.get(), ctx_);
    DropConnectionLocked();
    return UnavailableError(Describe() + ": " + what + ": " + why);
  };
  switch (config_.data_type) {
    case RedisDataType::kList:
    case RedisDataType::kSortedSet: {
      const bool list = config_.data_type == RedisDataType::kList;
      Reply reply = run(list ? "LLEN %s" : "ZCARD %s", config_.key.c_str());
      if (!reply || reply->type != REDIS_REPLY_INTEGER)
        return failed(reply, list ? "LLEN" : "ZCARD");
      return static_cast<double>(reply->integer);
    }
    case RedisDataType::kStream: {
      Reply exists = run("EXISTS %s", config_.key.c_str());
      if (!exists || exists->type != REDIS_REPLY_INTEGER) return failed(exists, "EXISTS");
      if (exists->integer == 0) return 0.0;  // no stream yet: no work
      Reply groups = run("XINFO GROUPS %s", config_.key.c_str());
      if (!groups || groups->type != REDIS_REPLY_ARRAY) return failed(groups, "XINFO GROUPS");
      for (size_t g = 0; g < groups->elements; ++g) {
        const redisReply* group = groups->element[g];
        const redisReply* name = Field(group, "name");
        if (name == nullptr || std::string_view(name->str, name->len) != config_.consumer_group)
          continue;
        const redisReply* pending = Field(group, "pending");
        const redisReply* lag = Field(group, "lag");
        const double pending_n = pending && pending->type == REDIS_REPLY_INTEGER
                                     ? static_cast<double>(pending->integer)
                                     : 0;
        if (lag == nullptr || lag->type != REDIS_REPLY_INTEGER)
          return UnavailableError(
              Describe() +
              ": the group's lag is unknown (Redis 7 reports it unless entries were deleted)");
        return static_cast<double>(lag->integer) +
               pending_n;  // undelivered + delivered but not acknowledged
      }
      return FailedPreconditionError(Describe() + ": no consumer group \"" +
                                     config_.consumer_group + "\"");
    }
  }
  return InternalError("unhandled redis data type");
}

Result<double> RedisQueueSource::ReadDepth() {
  std::lock_guard<std::mutex> lock(mu_);
  if (ctx_ == nullptr) GPUVPA_RETURN_IF_ERROR(ConnectLocked());
  return QueryLocked();
}

}  // namespace gpuvpa::scaler
