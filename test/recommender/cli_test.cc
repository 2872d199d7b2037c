// The recommend and demo-trace commands end to end (as the README runs them).
#include <gtest/gtest.h>

#include <sstream>

#include "recommender/cmd/commands.h"
#include "test/recommender/test_util.h"

namespace gpuvpa::recommender {
namespace {

class CliTest : public ::testing::Test {
 protected:
  int Run(int (*command)(const std::vector<std::string>&, std::ostream&, std::ostream&),
          const std::vector<std::string>& args) {
    out_.str("");
    err_.str("");
    return command(args, out_, err_);
  }
  testing::ScopedTempDir dir_;
  std::ostringstream out_;
  std::ostringstream err_;
};

TEST_F(CliTest, DemoTraceThenRecommendPrintsEveryWorkload) {
  const std::string trace = dir_.Path("demo.csv");
  ASSERT_EQ(Run(RunDemoTraceCommand, {"--out", trace, "--days", "2"}), 0) << err_.str();
  ASSERT_EQ(Run(RunRecommendCommand, {"--trace", trace, "--wide"}), 0) << err_.str();
  for (const char* name :
       {"agents/Deployment/agent-loop/worker", "chat/StatefulSet/vllm-llama/vllm",
        "research/StatefulSet/nightly-train/trainer", "VRAM set by allocator config"})
    EXPECT_NE(out_.str().find(name), std::string::npos) << name << "\n" << out_.str();
  EXPECT_NE(err_.str().find("31680 accepted, 0 already ingested (skipped), 0 malformed"),
            std::string::npos)
      << err_.str();
}

TEST_F(CliTest, JsonFormatAndCheckpointRestore) {
  const std::string trace = dir_.Path("demo.csv");
  const std::string ckpt = dir_.Path("ckpt");
  ASSERT_EQ(Run(RunDemoTraceCommand, {"--out", trace, "--days", "2"}), 0);
  ASSERT_EQ(Run(RunRecommendCommand, {"--trace", trace, "--checkpoint", ckpt, "--format", "json"}),
            0)
      << err_.str();
  EXPECT_EQ(out_.str().front(), '[');
  EXPECT_NE(out_.str().find("\"vram_target_bytes\""), std::string::npos);
  ASSERT_EQ(Run(RunRecommendCommand, {"--trace", trace, "--checkpoint", ckpt}), 0);
  EXPECT_NE(err_.str().find("restored 7 workload-containers"), std::string::npos) << err_.str();
}

TEST_F(CliTest, BadUsageNamesTheProblem) {
  EXPECT_EQ(Run(RunRecommendCommand, {}), 2);
  EXPECT_NE(err_.str().find("--trace is required"), std::string::npos);
  EXPECT_EQ(Run(RunRecommendCommand, {"--trace", "x", "--format", "yaml"}), 2);
  EXPECT_NE(err_.str().find("--format"), std::string::npos);
  EXPECT_NE(err_.str().find("yaml"), std::string::npos);
  EXPECT_EQ(Run(RunRecommendCommand, {"--trace", dir_.Path("missing.csv")}), 1);
  EXPECT_NE(err_.str().find("no such file"), std::string::npos);
  EXPECT_EQ(Run(RunRecommendCommand, {"--trace", "x", "--bogus"}), 2);
  EXPECT_NE(err_.str().find("--bogus"), std::string::npos);
}

}  // namespace
}  // namespace gpuvpa::recommender
