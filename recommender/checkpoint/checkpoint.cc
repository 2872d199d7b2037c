// Checkpoint encoding, validation and crash-safe storage.
#include "recommender/checkpoint/checkpoint.h"

#include <google/protobuf/arena.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/base/atomic_file.h"
#include "core/base/crc32c.h"
#include "core/base/names.h"
#include "core/gpu/gpu_allocation.h"

namespace gpuvpa::recommender {
namespace {

constexpr char kMagic[8] = {'G', 'P', 'V', 'A', 'C', 'K', 'P', 'T'};
constexpr size_t kHeaderSize = sizeof kMagic + 4 + 8 + 4;
// Tolerated relative gap between a histogram's stored total and the sum of its buckets.
constexpr double kTotalWeightTolerance = 1e-6;

template <typename T>
void SetLe(char* p, T v) {
  for (size_t i = 0; i < sizeof(T); ++i) p[i] = static_cast<char>((v >> (8 * i)) & 0xFF);
}

// `out` is kHeaderSize bytes of room followed by the payload: writes the header there.
void FillHeader(std::string& out) {
  const std::string_view payload = std::string_view(out).substr(kHeaderSize);
  char* p = out.data();
  std::memcpy(p, kMagic, sizeof kMagic);
  SetLe<uint32_t>(p + sizeof kMagic, kCheckpointFormatVersion);
  SetLe<uint64_t>(p + sizeof kMagic + 4, payload.size());
  SetLe<uint32_t>(p + sizeof kMagic + 12, Crc32c(payload));
}

// The checkpoint messages of a fleet live in one arena: built or parsed in large blocks and
// freed at once (per-message allocation and destruction were a third of a save).
google::protobuf::ArenaOptions CheckpointArenaOptions() {
  google::protobuf::ArenaOptions o;
  o.start_block_size = 64 << 10;
  o.max_block_size = 8 << 20;
  return o;
}

template <typename T>
T GetLe(const char* p) {
  T v = 0;
  for (size_t i = 0; i < sizeof(T); ++i)
    v |= static_cast<T>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

void SaveBucketing(const Bucketing& b, v1::BucketingCheckpoint* out) {
  out->set_kind(static_cast<uint32_t>(b.kind()));
  out->set_max_value(b.max_value());
  out->set_first_bucket_size(b.first_bucket_size());
  out->set_ratio(b.ratio());
  out->set_num_buckets(static_cast<uint32_t>(b.num_buckets()));
}

bool SameBucketing(const Bucketing& b, const v1::BucketingCheckpoint& c) {
  return c.kind() == static_cast<uint32_t>(b.kind()) && c.max_value() == b.max_value() &&
         c.first_bucket_size() == b.first_bucket_size() && c.ratio() == b.ratio() &&
         c.num_buckets() == static_cast<uint32_t>(b.num_buckets());
}

void SaveHistogram(std::span<const double> weights, double total, v1::HistogramCheckpoint* out) {
  const auto used = static_cast<int>(
      std::count_if(weights.begin(), weights.end(), [](double w) { return w != 0; }));
  out->mutable_bucket_index()->Reserve(used);
  out->mutable_bucket_weight()->Reserve(used);
  for (size_t b = 0; b < weights.size(); ++b) {
    if (weights[b] == 0) continue;
    out->add_bucket_index(static_cast<uint32_t>(b));
    out->add_bucket_weight(weights[b]);
  }
  out->set_total_weight(total);
}

Status RestoreHistogram(const v1::HistogramCheckpoint& in, HistogramRow row, const char* what,
                        const std::string& workload) {
  auto bad = [&](const std::string& why) {
    return DataLossError("checkpoint workload " + workload + " " + what + " histogram: " + why);
  };
  if (in.bucket_index_size() != in.bucket_weight_size())
    return bad("index and weight counts differ");
  double sum = 0;
  for (int i = 0; i < in.bucket_index_size(); ++i) {
    const uint32_t b = in.bucket_index(i);
    const double w = in.bucket_weight(i);
    if (b >= row.weights.size()) return bad("bucket index " + std::to_string(b) + " out of range");
    // Indices are written in increasing order: anything else (a repeated index) is corruption.
    if (i > 0 && b <= in.bucket_index(i - 1))
      return bad("bucket index " + std::to_string(b) + " repeated or out of order");
    if (!std::isfinite(w) || w < 0)
      return bad("bucket " + std::to_string(b) + " has weight " + std::to_string(w));
    row.weights[b] = w;
    sum += w;
  }
  const double total = in.total_weight();
  if (!std::isfinite(total) || total < 0 ||
      std::abs(sum - total) > kTotalWeightTolerance * std::max(1.0, total))
    return bad("total weight " + std::to_string(total) + " does not match bucket sum " +
               std::to_string(sum));
  *row.total_weight = total;
  return OkStatus();
}

void SaveWorkload(const FleetStore& store, uint32_t row, v1::WorkloadCheckpoint* out) {
  const WorkloadState& st = store.state(row);
  *out->mutable_identity() = st.identity;
  SaveHistogram(store.vram_weights(row), store.vram_total_weight(row), out->mutable_vram());
  SaveHistogram(store.sm_weights(row), store.sm_total_weight(row), out->mutable_sm());
  out->set_first_seen_s(st.first_seen_s);
  out->set_last_seen_s(st.last_seen_s);
  out->set_vram_window_start_s(st.vram_window_start_s);
  out->set_vram_window_peak_bytes(st.vram_window_peak_bytes);
  out->set_vram_previous_window_peak_bytes(st.vram_previous_window_peak_bytes);
  out->set_last_active_s(st.last_active_s);
  out->set_longest_idle_gap_s(st.longest_idle_gap_s);
  out->set_sample_count(st.sample_count);
  out->set_cuda_oom_count(st.cuda_oom_count);
  out->set_shared_device_estimate(st.shared_device_estimate);
  out->set_per_process_usage(st.per_process_usage);
  out->set_sm_basis(static_cast<uint32_t>(st.sm_basis));
  out->set_observed_seconds(st.observed_seconds);
  out->set_active_seconds(st.active_seconds);
  out->set_allocated_gpu_seconds(st.allocated_gpu_seconds);
  out->set_used_vram_gpu_seconds(st.used_vram_gpu_seconds);
  out->set_used_sm_gpu_seconds(st.used_sm_gpu_seconds);
  out->set_vram_history_peak_bytes(st.vram_history_peak_bytes);
  out->set_pending_samples(st.pending_samples);
  out->set_pending_from_s(st.pending_from_s);
  out->set_pending_through_s(st.pending_through_s);
  out->set_pending_allocated_gpu_seconds(st.pending_allocated_gpu_seconds);
  out->set_pending_used_vram_gpu_seconds(st.pending_used_vram_gpu_seconds);
  out->set_pending_used_sm_gpu_seconds(st.pending_used_sm_gpu_seconds);
  for (const DeviceCursor& c : st.devices) {
    v1::DeviceCursorCheckpoint* d = out->add_devices();
    d->set_pod(c.pod);
    d->set_device(c.device);
    d->set_ingested_through_s(c.ingested_through_s);
    d->set_charged_through_s(c.charged_through_s);
    d->set_samples(c.samples);
    d->set_active_samples(c.active_samples);
    d->set_vram_peak_bytes(c.vram_peak_bytes);
  }
  if (const HourlyActivity activity = st.Activity(); activity.latest_hour >= 0) {
    v1::HourlyActivityCheckpoint* a = out->mutable_activity();
    a->set_latest_hour(activity.latest_hour);
    a->mutable_samples()->Reserve(kActivityHours);
    a->mutable_active()->Reserve(kActivityHours);
    for (int i = 0; i < kActivityHours; ++i) {
      a->add_samples(activity.samples[i]);
      a->add_active(activity.active[i]);
    }
  }
}

// Every number of the state must be finite: NaN or infinity in a checkpoint is corruption.
Status CheckFinite(const v1::WorkloadCheckpoint& in, const std::string& name) {
  const std::pair<const char*, double> fields[] = {
      {"first_seen_s", in.first_seen_s()},
      {"last_seen_s", in.last_seen_s()},
      {"vram_window_start_s", in.vram_window_start_s()},
      {"vram_window_peak_bytes", in.vram_window_peak_bytes()},
      {"vram_previous_window_peak_bytes", in.vram_previous_window_peak_bytes()},
      {"longest_idle_gap_s", in.longest_idle_gap_s()},
      {"observed_seconds", in.observed_seconds()},
      {"active_seconds", in.active_seconds()},
      {"allocated_gpu_seconds", in.allocated_gpu_seconds()},
      {"used_vram_gpu_seconds", in.used_vram_gpu_seconds()},
      {"used_sm_gpu_seconds", in.used_sm_gpu_seconds()},
      {"vram_history_peak_bytes", in.vram_history_peak_bytes()},
      {"pending_from_s", in.pending_from_s()},
      {"pending_through_s", in.pending_through_s()},
      {"pending_allocated_gpu_seconds", in.pending_allocated_gpu_seconds()},
      {"pending_used_vram_gpu_seconds", in.pending_used_vram_gpu_seconds()},
      {"pending_used_sm_gpu_seconds", in.pending_used_sm_gpu_seconds()},
  };
  for (const auto& [field, value] : fields)
    if (!std::isfinite(value))
      return DataLossError("checkpoint workload " + name + ": " + field + " is not finite");
  // last_active_s is NaN by design when the workload was never active.
  if (std::isinf(in.last_active_s()))
    return DataLossError("checkpoint workload " + name + ": last_active_s is infinite");
  for (double v : {in.allocated_gpu_seconds(), in.pending_allocated_gpu_seconds(),
                   in.pending_used_vram_gpu_seconds(), in.pending_used_sm_gpu_seconds()})
    if (v < 0) return DataLossError("checkpoint workload " + name + ": negative GPU time");
  if (in.sm_basis() >= kSmBasisCount)
    return DataLossError("checkpoint workload " + name + ": sm_basis " +
                         std::to_string(in.sm_basis()) + " is not a known basis");
  return OkStatus();
}

Status RestoreDevices(const v1::WorkloadCheckpoint& in, WorkloadState& st,
                      const std::string& name) {
  for (const v1::DeviceCursorCheckpoint& d : in.devices()) {
    if (Status s = ValidateObjectName("checkpoint pod", d.pod()); !s.ok())
      return DataLossError("checkpoint workload " + name + ": " + s.message());
    if (d.device() < -1 || !std::isfinite(d.ingested_through_s()) ||
        !std::isfinite(d.charged_through_s()) || !std::isfinite(d.vram_peak_bytes()) ||
        d.vram_peak_bytes() < 0 || d.vram_peak_bytes() > kMaxVramBytes ||
        d.active_samples() > d.samples())
      return DataLossError("checkpoint workload " + name + ": series " + d.pod() + "/" +
                           std::to_string(d.device()) + " has an invalid device or mark");
    for (const DeviceCursor& c : st.devices)
      if (c.pod == d.pod() && c.device == d.device())
        return DataLossError("checkpoint workload " + name + ": series " + d.pod() + "/" +
                             std::to_string(d.device()) + " appears twice");
    DeviceCursor cursor;
    cursor.pod = d.pod();
    cursor.device = d.device();
    cursor.ingested_through_s = d.ingested_through_s();
    cursor.charged_through_s = d.charged_through_s();
    cursor.samples = d.samples();
    cursor.active_samples = d.active_samples();
    cursor.vram_peak_bytes = d.vram_peak_bytes();
    st.devices.push_back(std::move(cursor));
  }
  return OkStatus();
}

Status RestoreActivity(const v1::WorkloadCheckpoint& in, WorkloadState& st,
                       const std::string& name) {
  if (!in.has_activity() || in.activity().latest_hour() < 0) return OkStatus();
  const v1::HourlyActivityCheckpoint& a = in.activity();
  if (a.samples_size() != kActivityHours || a.active_size() != kActivityHours ||
      a.latest_hour() > static_cast<int64_t>(kMaxSampleTimeS / 3600))
    return DataLossError("checkpoint workload " + name +
                         ": hourly activity has a bad shape or hour");
  st.activity.latest_hour = a.latest_hour();
  for (int i = 0; i < kActivityHours; ++i) {
    if (a.samples(i) > UINT16_MAX || a.active(i) > a.samples(i))
      return DataLossError("checkpoint workload " + name + ": hourly activity slot " +
                           std::to_string(i) + " is out of range");
    st.activity.samples[i] = static_cast<uint16_t>(a.samples(i));
    st.activity.active[i] = static_cast<uint16_t>(a.active(i));
  }
  return OkStatus();
}

Status RestoreWorkload(const v1::WorkloadCheckpoint& in, FleetStore& store) {
  const v1::WorkloadIdentity& id = in.identity();
  const std::string name =
      EncodeIdParts({id.namespace_name(), id.owner_kind(), id.owner_name(), id.container()});
  if (Status s = ValidateIdentity(id); !s.ok())
    return DataLossError("checkpoint workload " + name + ": " + s.message());
  if (Status s = CheckFinite(in, name); !s.ok()) return s;
  if (store.Find(WorkloadKeyOf(id)))
    return DataLossError("checkpoint workload " + name + " appears twice");
  Result<const GpuModel*> model = GpuCatalog::BuiltIn().FindModel(id.gpu_model());
  if (!model.ok())
    return DataLossError("checkpoint workload " + name + ": " + model.status().message());
  Result<GpuAllocation> allocation = ParseGpuAllocation(id.allocation());
  if (!allocation.ok())
    return DataLossError("checkpoint workload " + name + ": " + allocation.status().message());
  Result<AllocationUnit> unit = ResolveAllocationUnit(*allocation, **model);
  if (!unit.ok())
    return DataLossError("checkpoint workload " + name + ": " + unit.status().message());

  const uint32_t row = store.Track(id, *unit);
  if (Status s = RestoreHistogram(in.vram(), store.mutable_vram_row(row), "VRAM", name); !s.ok())
    return s;
  if (Status s = RestoreHistogram(in.sm(), store.mutable_sm_row(row), "SM", name); !s.ok())
    return s;
  WorkloadState& st = store.mutable_state(row);
  st.first_seen_s = in.first_seen_s();
  st.last_seen_s = in.last_seen_s();
  st.vram_window_start_s = in.vram_window_start_s();
  st.vram_window_peak_bytes = in.vram_window_peak_bytes();
  st.vram_previous_window_peak_bytes = in.vram_previous_window_peak_bytes();
  st.last_active_s = in.last_active_s();
  st.longest_idle_gap_s = in.longest_idle_gap_s();
  st.sample_count = in.sample_count();
  st.cuda_oom_count = in.cuda_oom_count();
  st.shared_device_estimate = in.shared_device_estimate();
  st.per_process_usage = in.per_process_usage();
  st.sm_basis = static_cast<SmBasis>(in.sm_basis());
  st.observed_seconds = in.observed_seconds();
  st.active_seconds = in.active_seconds();
  st.allocated_gpu_seconds = in.allocated_gpu_seconds();
  st.used_vram_gpu_seconds = in.used_vram_gpu_seconds();
  st.used_sm_gpu_seconds = in.used_sm_gpu_seconds();
  st.vram_history_peak_bytes = in.vram_history_peak_bytes();
  st.pending_samples = in.pending_samples();
  st.pending_from_s = in.pending_from_s();
  st.pending_through_s = in.pending_through_s();
  st.pending_allocated_gpu_seconds = in.pending_allocated_gpu_seconds();
  st.pending_used_vram_gpu_seconds = in.pending_used_vram_gpu_seconds();
  st.pending_used_sm_gpu_seconds = in.pending_used_sm_gpu_seconds();
  if (st.sample_count > 0) store.NoteRestoredSampleTime(st.last_seen_s);
  if (Status s = RestoreActivity(in, st, name); !s.ok()) return s;
  return RestoreDevices(in, st, name);
}

// Checks the frame and returns the payload.
Result<std::string_view> Unframe(std::string_view bytes) {
  if (bytes.size() < kHeaderSize)
    return DataLossError("checkpoint truncated: " + std::to_string(bytes.size()) +
                         " bytes is shorter than the " + std::to_string(kHeaderSize) +
                         "-byte header");
  if (std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    return DataLossError("not a gpuvpa checkpoint (bad magic)");
  const char* p = bytes.data() + sizeof kMagic;
  const auto version = GetLe<uint32_t>(p);
  const auto length = GetLe<uint64_t>(p + 4);
  const auto crc = GetLe<uint32_t>(p + 12);
  if (version != kCheckpointFormatVersion)
    return FailedPreconditionError("checkpoint format version " + std::to_string(version) +
                                   " is not the version this build reads (" +
                                   std::to_string(kCheckpointFormatVersion) + ")");
  const size_t actual = bytes.size() - kHeaderSize;
  if (length != actual)
    return DataLossError("checkpoint length mismatch: header says " + std::to_string(length) +
                         " payload bytes, file has " + std::to_string(actual) +
                         (actual < length ? " (truncated)" : ""));
  std::string_view payload = bytes.substr(kHeaderSize);
  if (const uint32_t got = Crc32c(payload); got != crc) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "checkpoint checksum mismatch: stored %08x, computed %08x", crc,
                  got);
    return DataLossError(buf);
  }
  return payload;
}

// `last` is the file a writer saved last, decoded before writing: a file at its path with the
// same length and checksum, whose payload still matches its checksum, is that file (a CRC-32C
// catches the damage a disk or a stray write does), so it need not be decoded again to be kept
// as PATH.prev (at 100,000 workloads a decode is about a second).
bool IsLastSavedAndIntact(const SavedCheckpointFile& last, const std::string& path,
                          std::string_view bytes) {
  if (last.path != path || last.size != bytes.size() || bytes.size() < kHeaderSize ||
      GetLe<uint32_t>(bytes.data() + sizeof kMagic + 12) != last.crc)
    return false;
  return Unframe(bytes).ok();
}

// A crash mid-save leaves PATH.tmp.<pid> or PATH.prev.tmp.<pid> behind; they are never read,
// only removed, so that repeated crashes cannot fill the disk.
void RemoveStaleTemporaries(const std::string& path) {
  const std::filesystem::path p(path);
  const std::string prefix = p.filename().string();
  std::error_code ec;
  const std::filesystem::path dir = p.has_parent_path() ? p.parent_path() : ".";
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with(prefix + ".tmp.") || name.starts_with(prefix + ".prev.tmp."))
      std::filesystem::remove(entry.path(), ec);
  }
}

}  // namespace

std::string PreviousCheckpointPath(const std::string& path) { return path + ".prev"; }

std::string EncodeCheckpoint(const FleetStore& store, double saved_at_s) {
  // The FleetCheckpoint's bytes, written as SerializeToString would (fields in number order)
  // but one workload at a time through one reused message: no tree of 100,000 messages to
  // build, serialise and free.
  v1::FleetCheckpoint head;
  head.set_format_version(kCheckpointFormatVersion);
  SaveBucketing(store.vram_bucketing(), head.mutable_vram_bucketing());
  SaveBucketing(store.sm_bucketing(), head.mutable_sm_bucketing());
  head.set_reference_time_s(store.clock().reference_time_s());
  head.set_half_life_s(store.clock().half_life_s());
  head.set_saved_at_s(saved_at_s);
  std::string out(kHeaderSize, '\0');
  head.AppendToString(&out);  // fields 1-6
  v1::WorkloadCheckpoint w;
  constexpr uint32_t kWorkloadsTag =
      (v1::FleetCheckpoint::kWorkloadsFieldNumber << 3) |
      google::protobuf::internal::WireFormatLite::WIRETYPE_LENGTH_DELIMITED;
  for (uint32_t row = 0; row < store.size(); ++row) {  // field 7
    w.Clear();
    SaveWorkload(store, row, &w);
    const size_t size = w.ByteSizeLong();
    const size_t at = out.size();
    out.resize(at + 1 + google::protobuf::io::CodedOutputStream::VarintSize64(size) + size);
    auto* p = reinterpret_cast<uint8_t*>(out.data() + at);
    p = google::protobuf::io::CodedOutputStream::WriteVarint32ToArray(kWorkloadsTag, p);
    p = google::protobuf::io::CodedOutputStream::WriteVarint64ToArray(size, p);
    w.SerializeWithCachedSizesToArray(p);
  }
  v1::FleetCheckpoint tail;  // field 8 (a default value writes nothing, as in the whole message)
  tail.set_source_through_s(store.source_through_s());
  tail.AppendToString(&out);
  FillHeader(out);
  return out;
}

std::string FrameCheckpointPayload(std::string_view payload) {
  std::string out(kHeaderSize, '\0');
  out += payload;
  FillHeader(out);
  return out;
}

Result<FleetStore> DecodeCheckpoint(std::string_view bytes, const FleetStoreOptions& options) {
  Result<std::string_view> payload = Unframe(bytes);
  if (!payload.ok()) return payload.status();
  google::protobuf::Arena arena(CheckpointArenaOptions());
  v1::FleetCheckpoint& cp = *google::protobuf::Arena::CreateMessage<v1::FleetCheckpoint>(&arena);
  if (!cp.ParseFromArray(payload->data(), static_cast<int>(payload->size())))
    return DataLossError("checkpoint payload does not parse as FleetCheckpoint");
  if (cp.format_version() != kCheckpointFormatVersion)
    return DataLossError("checkpoint payload version " + std::to_string(cp.format_version()) +
                         " disagrees with its header");
  FleetStore store(options);
  if (!SameBucketing(store.vram_bucketing(), cp.vram_bucketing()) ||
      !SameBucketing(store.sm_bucketing(), cp.sm_bucketing()))
    return FailedPreconditionError(
        "checkpoint histogram buckets differ from this configuration; refusing to reinterpret "
        "them");
  if (cp.half_life_s() != options.half_life_s)
    return FailedPreconditionError("checkpoint half-life " + std::to_string(cp.half_life_s()) +
                                   " s differs from the configured " +
                                   std::to_string(options.half_life_s) + " s");
  if (!std::isfinite(cp.reference_time_s()) || cp.reference_time_s() < 0 ||
      cp.reference_time_s() > kMaxSampleTimeS)
    return DataLossError("checkpoint reference time " + std::to_string(cp.reference_time_s()) +
                         " is out of range");
  store.set_reference_time_s(cp.reference_time_s());
  if (!std::isfinite(cp.source_through_s()) || cp.source_through_s() < 0 ||
      cp.source_through_s() > kMaxSampleTimeS)
    return DataLossError("checkpoint source high-water mark " +
                         std::to_string(cp.source_through_s()) + " is out of range");
  store.set_source_through_s(cp.source_through_s());
  store.Reserve(static_cast<size_t>(cp.workloads_size()));
  for (const v1::WorkloadCheckpoint& w : cp.workloads()) {
    if (Status s = RestoreWorkload(w, store); !s.ok()) return s;
  }
  return store;
}

Status SaveCheckpoint(const FleetStore& store, const std::string& path, double saved_at_s) {
  return SaveEncodedCheckpoint(EncodeCheckpoint(store, saved_at_s), path, store.options());
}

Status SaveEncodedCheckpoint(const std::string& bytes, const std::string& path,
                             const FleetStoreOptions& options, SavedCheckpointFile* last) {
  // What is written must read back: a file this build could not load is never written.
  if (Result<FleetStore> check = DecodeCheckpoint(bytes, options); !check.ok())
    return InternalError("checkpoint not saved, it would not load back: " +
                         check.status().message());
  // Keep the current file as the fallback, but only if it is itself good (it fully decodes):
  // a corrupt file must never displace the last good one. A hard link (then an atomic rename
  // onto PATH.prev) keeps PATH in place, so at every instant PATH holds a complete checkpoint,
  // old or new.
  if (Result<std::string> current = ReadWholeFile(path);
      current.ok() && ((last != nullptr && IsLastSavedAndIntact(*last, path, *current)) ||
                       DecodeCheckpoint(*current, options).ok())) {
    const std::string prev = PreviousCheckpointPath(path);
    const std::string prev_tmp = prev + ".tmp." + std::to_string(::getpid());
    ::unlink(prev_tmp.c_str());
    if (::link(path.c_str(), prev_tmp.c_str()) != 0)
      return ErrnoError("link " + path + " to " + prev_tmp, errno);
    if (std::rename(prev_tmp.c_str(), prev.c_str()) != 0) {
      const int err = errno;
      ::unlink(prev_tmp.c_str());
      return ErrnoError("rename " + prev_tmp + " to " + prev, err);
    }
  }
  GPUVPA_RETURN_IF_ERROR(WriteFileAtomically(path, bytes));
  if (last != nullptr)
    *last = {path, bytes.size(), GetLe<uint32_t>(bytes.data() + sizeof kMagic + 12)};
  return OkStatus();
}

CheckpointWriter::CheckpointWriter(std::string path, FleetStoreOptions options)
    : path_(std::move(path)), options_(std::move(options)), thread_([this] { Loop(); }) {}

CheckpointWriter::~CheckpointWriter() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void CheckpointWriter::Submit(const FleetStore& store, double saved_at_s) {
  std::string bytes = EncodeCheckpoint(store, saved_at_s);
  {
    std::lock_guard<std::mutex> lock(mu_);
    waiting_.emplace(std::move(bytes), saved_at_s);
  }
  cv_.notify_all();
}

Status CheckpointWriter::Flush() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return !waiting_ && !busy_; });
  return outcome_.last;
}

CheckpointWriter::Outcome CheckpointWriter::outcome() const {
  std::lock_guard<std::mutex> lock(mu_);
  return outcome_;
}

void CheckpointWriter::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || waiting_; });
    if (!waiting_) return;  // stopping, nothing left to save
    std::pair<std::string, double> job = std::move(*waiting_);
    waiting_.reset();
    busy_ = true;
    lock.unlock();
    const Status saved = SaveEncodedCheckpoint(job.first, path_, options_, &last_saved_);
    lock.lock();
    busy_ = false;
    ++outcome_.saves;
    outcome_.last = saved;
    if (saved.ok()) outcome_.saved_at_s = job.second;
    cv_.notify_all();
  }
}

Result<CheckpointLoad> LoadCheckpoint(const std::string& path, FleetStore& store) {
  RemoveStaleTemporaries(path);
  CheckpointLoad load;
  bool any_exists = false;
  for (const std::string& candidate : {path, PreviousCheckpointPath(path)}) {
    Result<std::string> bytes = ReadWholeFile(candidate);
    if (!bytes.ok()) {
      if (bytes.status().code() != StatusCode::kNotFound)
        load.refused.emplace_back(bytes.status().code(),
                                  candidate + ": " + bytes.status().message());
      continue;
    }
    any_exists = true;
    Result<FleetStore> decoded = DecodeCheckpoint(*bytes, store.options());
    if (!decoded.ok()) {
      load.refused.emplace_back(decoded.status().code(),
                                candidate + ": " + decoded.status().message());
      continue;
    }
    store = std::move(decoded).value();
    load.loaded_from = candidate;
    return load;
  }
  if (!any_exists && load.refused.empty()) return NotFoundError("no checkpoint at " + path);
  std::string why;
  for (const Status& s : load.refused) why += (why.empty() ? "" : "; ") + s.message();
  return DataLossError("no usable checkpoint: " + why);
}

}  // namespace gpuvpa::recommender
