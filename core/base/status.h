// Errors as values at module boundaries: Status (a code and a message naming what was wrong) and
// Result<T> (a value or the Status saying why there is none).
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace gpuvpa {

enum class StatusCode {
  kOk,
  kInvalidArgument,     // the caller's input is wrong (names the field and value)
  kNotFound,            // a file or entry does not exist
  kDataLoss,            // stored data is corrupt or unreadable
  kFailedPrecondition,  // stored data is valid but not usable by this build (e.g. version)
  kUnavailable,         // a source is down; retry later
  kInternal,            // an operating-system or library call failed
  // Answers of an API server (the Kubernetes client maps HTTP statuses onto these).
  kUnauthenticated,    // 401: no valid credential
  kPermissionDenied,   // 403: the credential may not do this (names the verb and resource)
  kAborted,            // 409: a concurrent change (stale resourceVersion) or already exists
  kResourceExhausted,  // 429: throttled; retry after a while
  kOutOfRange,         // 410: a resourceVersion older than the server keeps (relist)
  kAlreadyExists,      // an id is recorded with other content (never a silent success)
};

const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status OkStatus() { return {}; }
inline Status InvalidArgumentError(std::string m) {
  return {StatusCode::kInvalidArgument, std::move(m)};
}
inline Status NotFoundError(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status DataLossError(std::string m) { return {StatusCode::kDataLoss, std::move(m)}; }
inline Status FailedPreconditionError(std::string m) {
  return {StatusCode::kFailedPrecondition, std::move(m)};
}
inline Status UnavailableError(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
inline Status InternalError(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

// Status from errno after a failed system call: "<what>: <strerror>".
Status ErrnoError(const std::string& what, int err);

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}        // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    assert(!std::get<Status>(v_).ok());
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  const T& value() const& { return std::get<T>(v_); }
  T& value() & { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace gpuvpa

// Returns the Status of `expr` from the enclosing function when it is not OK.
#define GPUVPA_RETURN_IF_ERROR(expr)                                      \
  do {                                                                    \
    if (::gpuvpa::Status _status = (expr); !_status.ok()) return _status; \
  } while (0)
