// Checkpoints: exact round trips, restart equivalence, refusal of corrupt files with the
// previous good one kept.
#include "recommender/checkpoint/checkpoint.h"

#include <gtest/gtest.h>

#include <fstream>

#include "core/base/atomic_file.h"
#include "core/gpu/gpu_catalog.h"
#include "proto/gpuvpa.pb.h"
#include "recommender/input/demo_fleet.h"
#include "recommender/input/trace_csv.h"
#include "test/recommender/test_util.h"

namespace gpuvpa::recommender {
namespace {

using testing::RecommendationFingerprint;
using testing::ScopedTempDir;

class CheckpointTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    DemoFleetOptions options;
    options.days = 2;
    trace_ = new std::string(GenerateDemoFleetTrace(options));
  }
  static void TearDownTestSuite() { delete trace_; }

  static void Replay(FleetStore& store, std::string_view csv) {
    TraceReplayer replayer(store, GpuCatalog::BuiltIn());
    Result<TraceReplayReport> r = replayer.ReplayText(csv);
    ASSERT_TRUE(r.ok()) << r.status().message();
    ASSERT_EQ(r->malformed, 0u);
  }

  static void WriteRaw(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  }

  // Saves a checkpoint of the first quarter of the trace, then one of all of it, at `path`;
  // returns the fingerprint of the first (now PATH.prev).
  static std::string SaveTwoGenerations(const std::string& path) {
    FleetStore first;
    Replay(first, trace_->substr(0, trace_->find('\n', trace_->size() / 4) + 1));
    EXPECT_TRUE(SaveCheckpoint(first, path, 1).ok());
    FleetStore second;
    Replay(second, *trace_);
    EXPECT_TRUE(SaveCheckpoint(second, path, 2).ok());
    return RecommendationFingerprint(first);
  }

  // Saves `store` (the trace's first 100 kB) twice at `path`; returns PATH.prev's bytes.
  static std::string SaveSameStoreTwice(FleetStore& store, const std::string& path) {
    Replay(store, trace_->substr(0, trace_->find('\n', 100000) + 1));
    EXPECT_TRUE(SaveCheckpoint(store, path, 1).ok());
    EXPECT_TRUE(SaveCheckpoint(store, path, 2).ok());
    return *ReadWholeFile(PreviousCheckpointPath(path));
  }

  static std::string* trace_;
  ScopedTempDir dir_;
};

std::string* CheckpointTest::trace_ = nullptr;

// The payload is written a workload at a time; it must be the bytes protobuf itself writes for
// the whole FleetCheckpoint (field order included), so any protobuf reader takes it.
TEST_F(CheckpointTest, PayloadIsProtobufsOwnSerialisation) {
  FleetStore store;
  Replay(store, *trace_);
  store.set_source_through_s(1.7e9);
  const std::string bytes = EncodeCheckpoint(store, 123);
  const std::string payload = bytes.substr(24);  // after the 24-byte header
  v1::FleetCheckpoint parsed;
  ASSERT_TRUE(parsed.ParseFromString(payload));
  EXPECT_EQ(parsed.workloads_size(), static_cast<int>(store.size()));
  EXPECT_EQ(parsed.source_through_s(), 1.7e9);
  EXPECT_EQ(parsed.SerializeAsString(), payload);
  EXPECT_EQ(FrameCheckpointPayload(payload), bytes);
}

TEST_F(CheckpointTest, RoundTripIsBitExact) {
  FleetStore store;
  Replay(store, *trace_);
  const std::string bytes = EncodeCheckpoint(store, 123);
  Result<FleetStore> restored = DecodeCheckpoint(bytes, store.options());
  ASSERT_TRUE(restored.ok()) << restored.status().message();
  EXPECT_EQ(EncodeCheckpoint(*restored, 123), bytes);
  ASSERT_EQ(restored->size(), store.size());
  for (uint32_t row = 0; row < store.size(); ++row) {
    EXPECT_TRUE(std::equal(store.vram_weights(row).begin(), store.vram_weights(row).end(),
                           restored->vram_weights(row).begin()));
    EXPECT_EQ(store.sm_total_weight(row), restored->sm_total_weight(row));
  }
  EXPECT_EQ(RecommendationFingerprint(*restored), RecommendationFingerprint(store));
}

TEST_F(CheckpointTest, RestartGivesTheSameRecommendationsAsAnUninterruptedRun) {
  const size_t half = trace_->find('\n', trace_->size() / 2) + 1;
  const std::string header = trace_->substr(0, trace_->find('\n') + 1);
  FleetStore uninterrupted;
  Replay(uninterrupted, *trace_);

  const std::string path = dir_.Path("ckpt");
  {
    FleetStore before_restart;
    Replay(before_restart, trace_->substr(0, half));
    ASSERT_TRUE(SaveCheckpoint(before_restart, path, 0).ok());
  }
  FleetStore after_restart;
  Result<CheckpointLoad> load = LoadCheckpoint(path, after_restart);
  ASSERT_TRUE(load.ok()) << load.status().message();
  EXPECT_EQ(load->loaded_from, path);
  Replay(after_restart, header + trace_->substr(half));
  EXPECT_EQ(RecommendationFingerprint(after_restart), RecommendationFingerprint(uninterrupted));
}

TEST_F(CheckpointTest, TruncatedCheckpointIsRefusedAndThePreviousOneSurvives) {
  const std::string path = dir_.Path("ckpt");
  std::string first;
  ASSERT_NO_FATAL_FAILURE(first = SaveTwoGenerations(path));
  const std::string good = *ReadWholeFile(path);

  for (size_t keep : {size_t{0}, size_t{10}, size_t{23}, good.size() / 2, good.size() - 1}) {
    WriteRaw(path, good.substr(0, keep));
    FleetStore loaded;
    Result<CheckpointLoad> load = LoadCheckpoint(path, loaded);
    ASSERT_TRUE(load.ok()) << load.status().message();
    EXPECT_EQ(load->loaded_from, PreviousCheckpointPath(path));
    ASSERT_EQ(load->refused.size(), 1u);
    EXPECT_EQ(load->refused[0].code(), StatusCode::kDataLoss);
    EXPECT_NE(load->refused[0].message().find("truncated"), std::string::npos)
        << load->refused[0].message();
    EXPECT_EQ(RecommendationFingerprint(loaded), first);
  }
}

TEST_F(CheckpointTest, BitFlippedCheckpointIsRefusedAndThePreviousOneSurvives) {
  const std::string path = dir_.Path("ckpt");
  std::string first;
  ASSERT_NO_FATAL_FAILURE(first = SaveTwoGenerations(path));
  const std::string good = *ReadWholeFile(path);
  for (size_t byte :
       {size_t{0}, size_t{9}, size_t{15}, size_t{21}, good.size() / 3, good.size() - 1}) {
    std::string bad = good;
    bad[byte] = static_cast<char>(bad[byte] ^ 0x10);
    WriteRaw(path, bad);
    FleetStore loaded;
    Result<CheckpointLoad> load = LoadCheckpoint(path, loaded);
    ASSERT_TRUE(load.ok()) << load.status().message();
    EXPECT_EQ(load->loaded_from, PreviousCheckpointPath(path)) << "byte " << byte;
    ASSERT_EQ(load->refused.size(), 1u);
    EXPECT_EQ(RecommendationFingerprint(loaded), first);
  }
}

TEST_F(CheckpointTest, EveryBitFlipIsRefused) {
  FleetStore store;
  Replay(store, trace_->substr(0, trace_->find('\n', trace_->size() / 8) + 1));
  const std::string good = EncodeCheckpoint(store, 7);
  // Every bit of the header and of the first and last KiB of payload, and a stride through the
  // rest.
  std::vector<size_t> bits;
  for (size_t i = 0; i < 8 * std::min<size_t>(good.size(), 1024 + 24); ++i) bits.push_back(i);
  for (size_t i = 8 * (good.size() - 1024); i < 8 * good.size(); ++i) bits.push_back(i);
  for (size_t i = 8 * 1024; i < 8 * good.size(); i += 8 * 97 + 3) bits.push_back(i);
  for (size_t bit : bits) {
    std::string bad = good;
    bad[bit / 8] = static_cast<char>(bad[bit / 8] ^ (1 << (bit % 8)));
    Result<FleetStore> decoded = DecodeCheckpoint(bad, store.options());
    ASSERT_FALSE(decoded.ok()) << "bit " << bit << " flipped went unnoticed";
  }
}

TEST_F(CheckpointTest, WrongFormatVersionIsRefusedNamingTheVersion) {
  FleetStore store;
  std::string bytes = EncodeCheckpoint(store, 0);
  bytes[8] = 7;  // version field, little-endian
  Result<FleetStore> decoded = DecodeCheckpoint(bytes, store.options());
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(decoded.status().message().find("version 7"), std::string::npos)
      << decoded.status().message();
}

TEST_F(CheckpointTest, DifferentBucketConfigurationIsRefused) {
  FleetStore store;
  Replay(store, trace_->substr(0, trace_->find('\n', 100000) + 1));
  FleetStoreOptions other;
  other.sm_bucket_width = 0.02;
  Result<FleetStore> decoded = DecodeCheckpoint(EncodeCheckpoint(store, 0), other);
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.status().code(), StatusCode::kFailedPrecondition);
}

TEST_F(CheckpointTest, WhenBothFilesAreBadTheStoreIsLeftUntouched) {
  const std::string path = dir_.Path("ckpt");
  WriteRaw(path, "garbage");
  WriteRaw(PreviousCheckpointPath(path), "more garbage, long enough to hold a header");
  FleetStore store;
  Replay(store, trace_->substr(0, trace_->find('\n', 100000) + 1));
  const std::string before = RecommendationFingerprint(store);
  Result<CheckpointLoad> load = LoadCheckpoint(path, store);
  ASSERT_FALSE(load.ok());
  EXPECT_EQ(load.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(load.status().message().find(path), std::string::npos);
  EXPECT_EQ(RecommendationFingerprint(store), before);
}

TEST_F(CheckpointTest, SavingNeverRotatesACorruptFileIntoThePreviousSlot) {
  const std::string path = dir_.Path("ckpt");
  FleetStore store;
  const std::string prev = SaveSameStoreTwice(store, path);
  WriteRaw(path, "corrupt");
  ASSERT_TRUE(SaveCheckpoint(store, path, 3).ok());
  EXPECT_EQ(*ReadWholeFile(PreviousCheckpointPath(path)), prev);
  FleetStore loaded;
  EXPECT_EQ(LoadCheckpoint(path, loaded)->loaded_from, path);
}

// The file this process last saved is kept as PATH.prev without decoding it again, but only
// while its bytes still match its checksum: one flipped byte (same length, same header) and it
// is judged like any other file, and refused.
TEST_F(CheckpointTest, TheLastSavedFileIsNotRotatedOnceDamaged) {
  const std::string path = dir_.Path("ckpt");
  FleetStore store;
  Replay(store, trace_->substr(0, trace_->find('\n', 100000) + 1));
  CheckpointWriter writer(path, store.options());  // it remembers the file it saved last
  auto save = [&](double at) {
    writer.Submit(store, at);
    return writer.Flush();
  };
  ASSERT_TRUE(save(1).ok());
  ASSERT_TRUE(save(2).ok());
  const std::string prev = *ReadWholeFile(PreviousCheckpointPath(path));
  std::string damaged = *ReadWholeFile(path);
  damaged[damaged.size() / 2] = static_cast<char>(damaged[damaged.size() / 2] ^ 0x10);
  WriteRaw(path, damaged);
  ASSERT_TRUE(save(3).ok());
  EXPECT_EQ(*ReadWholeFile(PreviousCheckpointPath(path)), prev);
  // Intact, it is rotated: PATH.prev is then the save of time 3.
  const std::string third = *ReadWholeFile(path);
  ASSERT_TRUE(save(4).ok());
  EXPECT_EQ(*ReadWholeFile(PreviousCheckpointPath(path)), third);
}

// The background writer: saves land in order, the newest state wins, Flush reports the last
// save, a failed save keeps the previous file, and destruction finishes what was submitted.
TEST_F(CheckpointTest, TheWriterSavesInOrderAndReportsFailures) {
  const std::string path = dir_.Path("ckpt");
  FleetStore store;
  Replay(store, trace_->substr(0, trace_->find('\n', 100000) + 1));
  {
    CheckpointWriter writer(path, store.options());
    EXPECT_EQ(writer.outcome().saves, 0u);
    for (int i = 1; i <= 5; ++i) writer.Submit(store, i);
    ASSERT_TRUE(writer.Flush().ok());
    const CheckpointWriter::Outcome o = writer.outcome();
    EXPECT_GE(o.saves, 1u);
    EXPECT_LE(o.saves, 5u);  // a save still waiting is replaced by a newer one
    EXPECT_EQ(o.saved_at_s, 5);
    writer.Submit(store, 6);
  }  // the destructor finishes the save of time 6
  FleetStore loaded;
  ASSERT_TRUE(LoadCheckpoint(path, loaded).ok());
  EXPECT_EQ(EncodeCheckpoint(loaded, 6), *ReadWholeFile(path));

  CheckpointWriter broken(dir_.Path("no-such-dir/ckpt"), store.options());
  broken.Submit(store, 7);
  const Status failed = broken.Flush();
  EXPECT_FALSE(failed.ok());
  EXPECT_NE(failed.message().find("no-such-dir"), std::string::npos) << failed.message();
  EXPECT_EQ(broken.outcome().saved_at_s, 0);
  EXPECT_EQ(broken.outcome().saves, 1u);
}

TEST_F(CheckpointTest, MissingCheckpointIsNotFound) {
  FleetStore store;
  Result<CheckpointLoad> load = LoadCheckpoint(dir_.Path("none"), store);
  ASSERT_FALSE(load.ok());
  EXPECT_EQ(load.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace gpuvpa::recommender
