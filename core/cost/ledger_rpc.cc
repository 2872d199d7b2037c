// gpuvpa.v1.LedgerService: row conversion, the server and the client.
#include "core/cost/ledger_rpc.h"

#include <algorithm>
#include <initializer_list>
#include <nlohmann/json.hpp>

#include "core/base/names.h"
#include "core/net/grpc_server.h"

namespace gpuvpa {
namespace {

const LedgerWriter kUpdater{
    "updater",
    {ActionKind::kRecommendation, ActionKind::kAppliedChange, ActionKind::kRollback},
    {"recommendation/", "apply:", "rollback:"}};
const LedgerWriter kScaler{
    "scaler",
    {ActionKind::kMeteredPeriod, ActionKind::kActivation, ActionKind::kDeactivation},
    {"metered/"}};
// A local client may append what any component may.
LedgerWriter UnionOf(std::string_view component, std::initializer_list<const LedgerWriter*> of) {
  LedgerWriter out{component, {}, {}};
  for (const LedgerWriter* w : of) {
    out.kinds.insert(out.kinds.end(), w->kinds.begin(), w->kinds.end());
    out.id_prefixes.insert(out.id_prefixes.end(), w->id_prefixes.begin(), w->id_prefixes.end());
  }
  return out;
}
const LedgerWriter kLocal = UnionOf("a local client without a certificate", {&kUpdater, &kScaler});

bool IsLoopbackPeer(std::string_view peer) {
  return peer.starts_with("ipv4:127.") || peer.starts_with("ipv6:[::1]") ||
         peer.starts_with("unix:");
}

// The writer of the call's client, or PERMISSION_DENIED.
Result<const LedgerWriter*> WriterOf(const grpc::ServerContext* context) {
  if (context == nullptr) return &kLocal;  // called in process
  const std::shared_ptr<const grpc::AuthContext> auth = context->auth_context();
  if (auth == nullptr || !auth->IsPeerAuthenticated()) {
    if (IsLoopbackPeer(context->peer())) return &kLocal;
    return Status(StatusCode::kPermissionDenied,
                  "ledger: a client without a certificate may append only over loopback");
  }
  std::string names;
  for (const char* property : {"x509_common_name", "x509_subject_alternative_name"})
    for (const grpc::string_ref& name : auth->FindPropertyValues(property)) {
      const std::string_view n(name.data(), name.size());
      if (const LedgerWriter* w = LedgerWriterNamed(n)) return w;
      names += (names.empty() ? "" : ", ") + QuoteForError(n);
    }
  return Status(StatusCode::kPermissionDenied,
                "ledger: the client certificate (" + names +
                    ") is no ledger writer: only gpuvpa-updater and gpuvpa-scaler may append");
}

}  // namespace

const LedgerWriter* LedgerWriterNamed(std::string_view certificate_name) {
  if (certificate_name == "gpuvpa-updater") return &kUpdater;
  if (certificate_name == "gpuvpa-scaler") return &kScaler;
  return nullptr;
}

const LedgerWriter& LocalLedgerWriter() { return kLocal; }

Status AuthorizeLedgerRows(const LedgerWriter& writer, std::span<const LedgerAction> rows) {
  for (const LedgerAction& a : rows) {
    const std::string who = "ledger row " + QuoteForError(a.action_id) + ": ";
    if (std::find(writer.kinds.begin(), writer.kinds.end(), a.kind) == writer.kinds.end())
      return Status(StatusCode::kPermissionDenied, who + "the " + std::string(writer.component) +
                                                       " may not append kind " +
                                                       std::string(ActionKindName(a.kind)));
    if (std::none_of(writer.id_prefixes.begin(), writer.id_prefixes.end(),
                     [&](std::string_view p) { return a.action_id.starts_with(p); })) {
      std::string prefixes;
      for (std::string_view p : writer.id_prefixes)
        prefixes += (prefixes.empty() ? "" : ", ") + std::string(p);
      return Status(
          StatusCode::kPermissionDenied,
          who + "ids of the " + std::string(writer.component) + " start with " + prefixes);
    }
  }
  return OkStatus();
}

v1::LedgerRow LedgerRowToProto(const LedgerAction& a) {
  v1::LedgerRow r;
  r.set_action_id(a.action_id);
  r.set_time_s(a.time_s);
  r.set_kind(std::string(ActionKindName(a.kind)));
  r.set_status(std::string(ActionStatusName(a.status)));
  r.set_namespace_name(a.namespace_name);
  r.set_workload(a.workload);
  r.set_cost_center(a.cost_center);
  r.set_gpu_model(a.gpu_model);
  r.set_before(a.before);
  r.set_after(a.after);
  r.set_monthly_before_micro_usd(a.monthly_before);
  r.set_monthly_after_micro_usd(a.monthly_after);
  r.set_period_start_s(a.period_start_s);
  r.set_period_end_s(a.period_end_s);
  r.set_allocated_milli_gpu_s(a.allocated_gpu_time);
  r.set_allocated_micro_usd(a.allocated);
  r.set_usage_measured(a.usage_measured);
  r.set_used_vram_micro_usd(a.used_vram);
  r.set_used_sm_micro_usd(a.used_sm);
  r.set_metered_milli_gpu_s(a.metered_gpu_time);
  r.set_metered_micro_usd(a.metered);
  r.set_reserved_micro_usd(a.reserved);
  r.set_evidence_json(a.evidence_json);
  return r;
}

Result<LedgerAction> LedgerRowFromProto(const v1::LedgerRow& r) {
  const std::string who = "ledger row " + QuoteForError(r.action_id());
  Result<ActionKind> kind = ParseActionKind(r.kind());
  if (!kind.ok())
    return InvalidArgumentError(who + ": kind " + QuoteForError(r.kind()) + ": " +
                                kind.status().message());
  Result<ActionStatus> status = ParseActionStatus(r.status());
  if (!status.ok())
    return InvalidArgumentError(who + ": status " + QuoteForError(r.status()) + ": " +
                                status.status().message());
  // Checked before it is parsed; every other bound is ValidateLedgerAction's, below.
  if (r.evidence_json().size() > kMaxLedgerEvidenceBytes)
    return InvalidArgumentError(who + ": evidence_json is longer than " +
                                std::to_string(kMaxLedgerEvidenceBytes) + " bytes");
  const nlohmann::json evidence = nlohmann::json::parse(r.evidence_json(), nullptr, false);
  if (evidence.is_discarded() || !evidence.is_object())
    return InvalidArgumentError(who + ": evidence_json is not a JSON object");
  LedgerAction a;
  a.action_id = r.action_id();
  a.time_s = r.time_s();
  a.kind = *kind;
  a.status = *status;
  a.namespace_name = r.namespace_name();
  a.workload = r.workload();
  a.cost_center = r.cost_center();
  a.gpu_model = r.gpu_model();
  a.before = r.before();
  a.after = r.after();
  a.monthly_before = r.monthly_before_micro_usd();
  a.monthly_after = r.monthly_after_micro_usd();
  a.period_start_s = r.period_start_s();
  a.period_end_s = r.period_end_s();
  a.allocated_gpu_time = r.allocated_milli_gpu_s();
  a.allocated = r.allocated_micro_usd();
  a.usage_measured = r.usage_measured();
  a.used_vram = r.used_vram_micro_usd();
  a.used_sm = r.used_sm_micro_usd();
  a.metered_gpu_time = r.metered_milli_gpu_s();
  a.metered = r.metered_micro_usd();
  a.reserved = r.reserved_micro_usd();
  a.evidence_json = r.evidence_json();
  if (Status s = ValidateLedgerAction(a); !s.ok()) return s;
  return a;
}

grpc::Status LedgerServiceImpl::Append(grpc::ServerContext* context,
                                       const v1::LedgerAppendRequest* request,
                                       v1::LedgerAppendResponse* response) {
  Result<const LedgerWriter*> writer = WriterOf(context);
  if (!writer.ok()) return ToGrpcStatus(writer.status());
  if (static_cast<size_t>(request->rows_size()) > kMaxLedgerRowsPerCall)
    return ToGrpcStatus(InvalidArgumentError("rows: " + std::to_string(request->rows_size()) +
                                             " rows in one call; at most " +
                                             std::to_string(kMaxLedgerRowsPerCall)));
  std::vector<LedgerAction> rows;
  rows.reserve(static_cast<size_t>(request->rows_size()));
  for (const v1::LedgerRow& r : request->rows()) {
    Result<LedgerAction> a = LedgerRowFromProto(r);
    if (!a.ok()) return ToGrpcStatus(a.status());
    rows.push_back(*std::move(a));
  }
  if (Status s = AuthorizeLedgerRows(**writer, rows); !s.ok()) return ToGrpcStatus(s);
  Result<size_t> added = ledger_.Append(rows);
  if (!added.ok()) return ToGrpcStatus(added.status());
  response->set_added(*added);
  return grpc::Status::OK;
}

Result<std::unique_ptr<RemoteLedger>> RemoteLedger::Connect(const ClientChannelOptions& options,
                                                            std::chrono::milliseconds timeout) {
  Result<std::shared_ptr<grpc::Channel>> channel = MakeClientChannel(options);
  if (!channel.ok()) return channel.status();
  return std::unique_ptr<RemoteLedger>(
      new RemoteLedger(options.address, v1::LedgerService::NewStub(*channel), timeout));
}

Result<size_t> RemoteLedger::Append(std::span<const LedgerAction> actions,
                                    std::span<const ChargeMark> marks) {
  if (!marks.empty())
    return InvalidArgumentError("charge marks are kept by the ledger's owner, not sent to " +
                                address_);
  size_t added = 0;
  for (size_t at = 0; at < actions.size();) {
    v1::LedgerAppendRequest request;
    size_t bytes = 0;
    while (at < actions.size() &&
           static_cast<size_t>(request.rows_size()) < kMaxLedgerRowsPerCall) {
      v1::LedgerRow row = LedgerRowToProto(actions[at]);
      // A repeated field costs its row's size plus a tag and a length of at most 6 bytes.
      const size_t row_bytes = row.ByteSizeLong() + 6;
      if (request.rows_size() > 0 && bytes + row_bytes > kMaxLedgerCallBytes) break;
      bytes += row_bytes;
      *request.add_rows() = std::move(row);
      ++at;
    }
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + timeout_);
    v1::LedgerAppendResponse response;
    const grpc::Status s = stub_->Append(&context, request, &response);
    if (!s.ok()) {
      const std::string what = "ledger service " + address_ + ": " + s.error_message();
      if (s.error_code() == grpc::StatusCode::INVALID_ARGUMENT) return InvalidArgumentError(what);
      if (s.error_code() == grpc::StatusCode::ALREADY_EXISTS)
        return Status(StatusCode::kAlreadyExists, what);
      // A certificate that may not write these rows: a configuration to fix, not a row to set
      // aside (a spool keeps the rows until it is fixed).
      if (s.error_code() == grpc::StatusCode::PERMISSION_DENIED)
        return Status(StatusCode::kPermissionDenied, what);
      return UnavailableError(what);
    }
    added += static_cast<size_t>(response.added());
  }
  return added;
}

}  // namespace gpuvpa
