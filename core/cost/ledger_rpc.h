// The ledger over gRPC (gpuvpa.v1.LedgerService): the process that owns the ledger file serves
// it, the other components append through RemoteLedger. One SQLite file then has one writer
// however many components charge to it.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "core/cost/ledger.h"
#include "core/net/grpc_client.h"
#include "proto/gpuvpa.grpc.pb.h"

namespace gpuvpa {

inline constexpr size_t kMaxLedgerRowsPerCall = 10000;

v1::LedgerRow LedgerRowToProto(const LedgerAction& action);
// INVALID_ARGUMENT naming the field for an unknown kind or status, an oversized field, or
// evidence that is not a JSON object. (Money, names and periods are checked by the ledger.)
Result<LedgerAction> LedgerRowFromProto(const v1::LedgerRow& row);

// Serves Append into `ledger` (which must outlive the service).
class LedgerServiceImpl final : public v1::LedgerService::Service {
 public:
  explicit LedgerServiceImpl(Ledger& ledger) : ledger_(ledger) {}
  grpc::Status Append(grpc::ServerContext* context, const v1::LedgerAppendRequest* request,
                      v1::LedgerAppendResponse* response) override;

 private:
  Ledger& ledger_;
};

// Appends through a LedgerService, in calls of at most kMaxLedgerRowsPerCall rows (each stored
// whole or not at all; a failure part way leaves the earlier calls stored, and a retry of the
// whole append adds only what is missing). A failed call is UNAVAILABLE (or the server's
// INVALID_ARGUMENT) naming the address; nothing is kept here (callers that must not lose a row
// spool it: core/cost/ledger_spool.h). Marks are not forwarded (only the owner's own charges
// carry them): a call with marks is INVALID_ARGUMENT.
class RemoteLedger final : public LedgerSink {
 public:
  static Result<std::unique_ptr<RemoteLedger>> Connect(
      const ClientChannelOptions& options,
      std::chrono::milliseconds timeout = std::chrono::seconds(10));
  Result<size_t> Append(std::span<const LedgerAction> actions,
                        std::span<const ChargeMark> marks = {}) override;
  using LedgerSink::Append;

 private:
  RemoteLedger(std::string address, std::unique_ptr<v1::LedgerService::Stub> stub,
               std::chrono::milliseconds timeout)
      : address_(std::move(address)), stub_(std::move(stub)), timeout_(timeout) {}
  const std::string address_;
  const std::unique_ptr<v1::LedgerService::Stub> stub_;
  const std::chrono::milliseconds timeout_;
};

}  // namespace gpuvpa
