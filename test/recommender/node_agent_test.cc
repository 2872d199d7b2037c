// gpuvpa-node-agent without a GPU: cgroup path forms, NVML through the fake libnvidia-ml.so.1
// (error paths, the real H200 recordings replayed in time), /metrics as Prometheus reads it
// (promtool check metrics), the binary's flags and probes.
#include "recommender/agent/node_agent.h"

#include <dlfcn.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "core/base/time_format.h"
#include "core/config/config.h"
#include "core/net/http_server.h"
#include "proto/gpuvpa.pb.h"
#include "recommender/agent/cgroup_path.h"
#include "recommender/agent/gpu_sampler.h"
#include "recommender/agent/nvml_library.h"
#include "recommender/agent/pod_resources.h"
#include "recommender/daemon/daemon_config.h"
#include "recommender/daemon/recommender_daemon.h"
#include "test/support/fake_kubelet.h"
#include "test/support/kube_test_cluster.h"
#include "test/support/process.h"
#include "test/support/prometheus_server.h"
#include "test/support/sockets.h"
#include "test/support/temp_dir.h"

namespace gpuvpa::agent {
namespace {

const std::string kFixtures = std::string(GPUVPA_SHARED_DATA_DIR) + "/fixtures/nvml-h200";
constexpr double kMiB = 1024.0 * 1024.0;

// ---- cgroup paths ----

TEST(CgroupPathTest, EveryPathFormNamesThePodAndContainer) {
  const std::string id(64, 'a');
  const std::string v2_containerd =
      "0::/kubepods.slice/kubepods-burstable.slice/"
      "kubepods-burstable-pod0f2c6d3a_91b4_4c1e_8a55_3b2f0a9e7d10.slice/cri-containerd-" +
      id + ".scope\n";
  const std::string guaranteed =
      "0::/kubepods.slice/kubepods-pod0f2c6d3a_91b4_4c1e_8a55_3b2f0a9e7d10.slice/crio-" + id +
      ".scope\n";
  const std::string conmon =
      "0::/kubepods.slice/kubepods-besteffort.slice/"
      "kubepods-besteffort-pod0f2c6d3a_91b4_4c1e_8a55_3b2f0a9e7d10.slice/crio-conmon-" +
      id + ".scope\n";
  const std::string docker =
      "0::/kubepods.slice/kubepods-besteffort.slice/"
      "kubepods-besteffort-pod0f2c6d3a_91b4_4c1e_8a55_3b2f0a9e7d10.slice/docker-" +
      id + ".scope\n";
  const std::string v1_cgroupfs =
      "12:memory:/kubepods/burstable/pod0f2c6d3a-91b4-4c1e-8a55-3b2f0a9e7d10/" + id +
      "\n11:cpu,cpuacct:/kubepods/burstable/pod0f2c6d3a-91b4-4c1e-8a55-3b2f0a9e7d10/" + id +
      "\n1:name=systemd:/kubepods/burstable/pod0f2c6d3a-91b4-4c1e-8a55-3b2f0a9e7d10/" + id + "\n";
  const std::string v2_cgroupfs =
      "0::/kubepods/besteffort/pod0f2c6d3a-91b4-4c1e-8a55-3b2f0a9e7d10/" + id + "\n";
  const std::string kind =
      "0::/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/"
      "kubelet-kubepods-besteffort-pod0f2c6d3a_91b4_4c1e_8a55_3b2f0a9e7d10.slice/"
      "cri-containerd-" +
      id + ".scope\n";
  const std::string sandbox =
      "0::/kubepods.slice/kubepods-burstable.slice/"
      "kubepods-burstable-pod0f2c6d3a_91b4_4c1e_8a55_3b2f0a9e7d10.slice\n";
  const std::string host = "0::/system.slice/containerd.service\n";
  const std::string uid = "0f2c6d3a-91b4-4c1e-8a55-3b2f0a9e7d10";
  struct Case {
    std::string what, text, uid, container, runtime;
  };
  const Case cases[] = {
      {"v2, systemd, containerd", v2_containerd, uid, id, "containerd"},
      {"v2, guaranteed QoS, CRI-O", guaranteed, uid, id, "cri-o"},
      {"CRI-O's conmon", conmon, uid, "", ""},
      {"docker", docker, uid, id, "docker"},
      {"v1, cgroupfs", v1_cgroupfs, uid, id, ""},
      {"v2, cgroupfs", v2_cgroupfs, uid, id, ""},
      {"kind (kubelet.slice)", kind, uid, id, "containerd"},
      {"the pod's sandbox", sandbox, uid, "", ""},
  };
  for (const Case& c : cases) {
    Result<std::optional<CgroupOwner>> owner = ParseProcCgroup(c.text);
    ASSERT_TRUE(owner.ok()) << c.what << ": " << owner.status().message();
    ASSERT_TRUE(owner->has_value()) << c.what;
    EXPECT_EQ((*owner)->pod_uid, c.uid) << c.what;
    EXPECT_EQ((*owner)->container_id, c.container) << c.what;
    EXPECT_EQ((*owner)->runtime, c.runtime) << c.what;
  }
  Result<std::optional<CgroupOwner>> none = ParseProcCgroup(host);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value()) << "a host process has no pod";
}

TEST(CgroupPathTest, MalformedKubepodsPathsAreRefusedNamingTheLine) {
  for (const std::string text :
       {"0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podNOTAUID.slice/x\n",
        "0::/kubepods/burstable/pod0f2c6d3a-91b4-4c1e-8a55-3b2f0a9e7d10/zzzz\n",
        "0::/kubepods.slice/kubepods-pod0f2c6d3a_91b4_4c1e_8a55_3b2f0a9e7d10.slice/"
        "mystery-abc.scope\n",
        "garbage without colons\n"}) {
    Result<std::optional<CgroupOwner>> owner = ParseProcCgroup(text);
    ASSERT_FALSE(owner.ok()) << text;
    EXPECT_EQ(owner.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(owner.status().message().find("cgroup line"), std::string::npos)
        << owner.status().message();
  }
}

// ---- NVML through the fake library ----

class FakeNvmlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* v :
         {"FAKE_NVML_DIR", "FAKE_NVML_SYNTHETIC", "FAKE_NVML_FAIL", "FAKE_NVML_NO_GPM",
          "FAKE_NVML_START", "FAKE_NVML_SPEED", "FAKE_NVML_PROCESS_NAMES", "FAKE_NVML_MIG"})
      ::unsetenv(v);
  }
  std::unique_ptr<nvml::Library> Open() {
    Result<std::unique_ptr<nvml::Library>> lib = nvml::Library::Open(GPUVPA_FAKE_NVML);
    EXPECT_TRUE(lib.ok()) << lib.status().message();
    return lib.ok() ? std::move(*lib) : nullptr;
  }
  // The fake's clock, pinned.
  static void SetTime(double t) {
    void* h = dlopen(GPUVPA_FAKE_NVML, RTLD_NOW | RTLD_NOLOAD);
    ASSERT_NE(h, nullptr);
    auto set = reinterpret_cast<void (*)(double)>(dlsym(h, "fakeNvmlSetTime"));
    ASSERT_NE(set, nullptr);
    set(t);
    dlclose(h);
  }
};

TEST_F(FakeNvmlTest, AnAbsentLibraryIsUnavailableAndNamed) {
  Result<std::unique_ptr<nvml::Library>> lib =
      nvml::Library::Open("/nonexistent/libnvidia-ml.so.1");
  ASSERT_FALSE(lib.ok());
  EXPECT_EQ(lib.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(lib.status().message().find("/nonexistent/libnvidia-ml.so.1"), std::string::npos);
  // A library without NVML's functions names the first one missing.
  Result<std::unique_ptr<nvml::Library>> wrong = nvml::Library::Open("libm.so.6");
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("has no function nvmlInit_v2"), std::string::npos)
      << wrong.status().message();
}

TEST_F(FakeNvmlTest, AFailedInitIsUnavailableWithNvmlsOwnWords) {
  ::setenv("FAKE_NVML_DIR", kFixtures.c_str(), 1);
  ::setenv("FAKE_NVML_FAIL", "nvmlInit_v2=9", 1);
  Result<std::unique_ptr<nvml::Library>> lib = nvml::Library::Open(GPUVPA_FAKE_NVML);
  ASSERT_FALSE(lib.ok());
  EXPECT_EQ(lib.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(lib.status().message().find("NVML_ERROR_DRIVER_NOT_LOADED (9)"), std::string::npos)
      << lib.status().message();
}

TEST_F(FakeNvmlTest, ALostGpuMakesTheAgentNotReady) {
  ::setenv("FAKE_NVML_SYNTHETIC", "2x4", 1);
  ::setenv("FAKE_NVML_FAIL", "nvmlDeviceGetMemoryInfo=15", 1);
  NodeAgentOptions options;
  options.nvml_library = GPUVPA_FAKE_NVML;
  options.label_by = LabelBy::kPid;
  NodeAgent agent(options);
  ASSERT_TRUE(agent.Start().ok());
  const Status s = agent.PollOnce(100);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("NVML_ERROR_GPU_IS_LOST"), std::string::npos) << s.message();
  const HttpServerResponse ready = agent.HandleHttp("/readyz");
  EXPECT_EQ(ready.status, 503);
  EXPECT_NE(ready.body.find("GPU_IS_LOST"), std::string::npos) << ready.body;
  EXPECT_EQ(agent.HandleHttp("/healthz").status, 200) << "alive: a restart would not help";
  EXPECT_NE(agent.HandleHttp("/metrics").body.find("gpuvpa_node_agent_poll_errors_total 1"),
            std::string::npos);
}

// A GPU in MIG mode: no util.gpu and no per-process utilization there (NVML says NOT_SUPPORTED,
// as the fake does), the GPU's own process list is for the privileged: each instance is read
// through its MIG device, its SM activity from nvmlGpmMigSampleGet (a ratio of the instance).
TEST_F(FakeNvmlTest, MigInstancesAreReadThroughTheirMigDevicesWithTheirOwnSmActivity) {
  ::setenv("FAKE_NVML_SYNTHETIC", "1x0", 1);
  ::setenv("FAKE_NVML_MIG",
           "7:1g.18gb:30:4242:9000,1:3g.71gb:80:4343:50000,1:3g.71gb:80:4344:1000,"
           "2:3g.71gb:0:0:0",
           1);
  NodeAgentOptions options;
  options.nvml_library = GPUVPA_FAKE_NVML;
  options.label_by = LabelBy::kPid;
  options.node_name = "gpu-node-1";
  NodeAgent agent(options);
  ASSERT_TRUE(agent.Start().ok());
  for (double t = 100; t < 102; t += 0.5) {
    SetTime(t);
    const Status s = agent.PollOnce(t);
    ASSERT_TRUE(s.ok()) << s.message();
  }
  EXPECT_EQ(agent.HandleHttp("/readyz").status, 200);
  const std::string page = agent.HandleHttp("/metrics").body;
  const std::string gpu = "GPU-fa4e0000-0000-4000-8000-000000000000";
  auto mig = [](int gi) { return "MIG-fa4e0000-0000-4000-8000-00000000000" + std::to_string(gi); };
  EXPECT_NE(page.find("gpuvpa_gpu_sm_active_ratio{gpu=\"0\",gpu_instance=\"7\",gpu_uuid=\"" + gpu +
                      "\",mig_profile=\"1g.18gb\",mig_uuid=\"" + mig(7) +
                      "\",model_name=\"NVIDIA H200\",node=\"gpu-node-1\"} 0.3\n"),
            std::string::npos)
      << page;
  EXPECT_NE(page.find("gpuvpa_gpu_memory_used_bytes{gpu=\"0\",gpu_instance=\"2\""),
            std::string::npos)
      << "an instance without processes is still seen (stranded capacity)\n"
      << page;
  EXPECT_EQ(page.find("gpuvpa_gpu_busy_ratio{"), std::string::npos) << "no util.gpu in MIG mode";
  // One process alone on its instance gets the instance's activity; two share it equally.
  auto container = [&](const char* family, int gi, const char* method, const char* pid) {
    return std::string(family) + "{container=\"\",gpu=\"0\",gpu_instance=\"" + std::to_string(gi) +
           "\",gpu_uuid=\"" + gpu + "\",method=\"" + method + "\",mig_profile=\"" +
           (gi == 7 ? "1g.18gb" : "3g.71gb") + "\",mig_uuid=\"" + mig(gi) +
           "\",model_name=\"NVIDIA H200\",namespace=\"\",node=\"gpu-node-1\",pid=\"" + pid +
           "\",pod=\"\"} ";
  };
  EXPECT_NE(
      page.find(container("gpuvpa_container_gpu_sm_active_ratio", 7, "alone", "4242") + "0.3\n"),
      std::string::npos)
      << page;
  EXPECT_NE(page.find(container("gpuvpa_container_gpu_memory_used_bytes", 7, "alone", "4242") +
                      std::to_string(9000LL * 1024 * 1024) + "\n"),
            std::string::npos)
      << page;
  for (const char* pid : {"4343", "4344"}) {
    EXPECT_NE(
        page.find(container("gpuvpa_container_gpu_sm_active_ratio", 1, "mig-equal-split", pid) +
                  "0.4\n"),
        std::string::npos)
        << pid << "\n"
        << page;
    EXPECT_NE(page.find(container("gpuvpa_container_gpu_sm_active_upper_ratio", 1,
                                  "mig-equal-split", pid) +
                        "0.8\n"),
              std::string::npos)
        << page;
  }
  EXPECT_EQ(page.find("gpuvpa_container_gpu_busy_ratio{"), std::string::npos)
      << "NVML has no per-process busy time in MIG mode";
}

TEST_F(FakeNvmlTest, WithoutGpmThereIsNoSmFigureOnlyBusyTime) {
  ::setenv("FAKE_NVML_SYNTHETIC", "1x2", 1);
  ::setenv("FAKE_NVML_FAIL", "nvmlGpmQueryDeviceSupport=3", 1);
  std::unique_ptr<nvml::Library> lib = Open();
  ASSERT_NE(lib, nullptr);
  GpuSampler sampler(*lib);
  ASSERT_TRUE(sampler.Init().ok());
  Snapshot snap = sampler.Poll(1);
  ASSERT_EQ(snap.devices.size(), 1u);
  EXPECT_TRUE(snap.devices[0].status.ok()) << snap.devices[0].status.message();
  EXPECT_FALSE(snap.devices[0].sm_active_ratio);
  ASSERT_EQ(snap.devices[0].processes.size(), 2u);
  for (const ProcessReading& p : snap.devices[0].processes) {
    EXPECT_EQ(p.busy_basis, BusyBasis::kSampled);
    EXPECT_FALSE(p.sm_active_ratio);
    EXPECT_EQ(p.method, "busy-time-only");
  }
}

// A driver that supports GPM but refuses this caller (NO_PERMISSION: GPM kept to admins) is not
// an error on every pass: said once, and the device's figures are busy time from then on.
TEST_F(FakeNvmlTest, AGpmRefusalFallsBackToBusyTimeOnceNotAnErrorEveryPass) {
  ::setenv("FAKE_NVML_SYNTHETIC", "1x2", 1);
  ::setenv("FAKE_NVML_FAIL", "nvmlGpmSampleGet=4", 1);
  std::unique_ptr<nvml::Library> lib = Open();
  ASSERT_NE(lib, nullptr);
  GpuSampler sampler(*lib);
  ASSERT_TRUE(sampler.Init().ok());
  for (double t : {1.0, 1.5, 2.0}) {
    Snapshot snap = sampler.Poll(t);
    ASSERT_EQ(snap.devices.size(), 1u);
    EXPECT_TRUE(snap.devices[0].status.ok()) << snap.devices[0].status.message();
    EXPECT_FALSE(snap.devices[0].sm_active_ratio);
    for (const ProcessReading& p : snap.devices[0].processes) {
      EXPECT_FALSE(p.sm_active_ratio);
      EXPECT_EQ(p.method, "busy-time-only");
    }
  }
  // Another failure of the same call (an unknown error) stays an error of its pass.
  ::setenv("FAKE_NVML_FAIL", "nvmlGpmSampleGet=999", 1);
  std::unique_ptr<nvml::Library> other = Open();
  ASSERT_NE(other, nullptr);
  GpuSampler flaky(*other);
  ASSERT_TRUE(flaky.Init().ok());
  const Snapshot snap = flaky.Poll(1);
  ASSERT_EQ(snap.devices.size(), 1u);
  EXPECT_FALSE(snap.devices[0].status.ok());
  EXPECT_NE(snap.devices[0].status.message().find("nvmlGpmSampleGet"), std::string::npos);
}

TEST_F(FakeNvmlTest, NoUtilizationSampleIsUnknownThenHeldThenIdleNeverAZeroAtOnce) {
  // The recording's first process (pid 466) is listed at 1796405231.569 with no smUtil yet.
  ::setenv("FAKE_NVML_DIR", kFixtures.c_str(), 1);
  std::unique_ptr<nvml::Library> lib = Open();
  ASSERT_NE(lib, nullptr);
  SetTime(1796405231.6);
  GpuSampler sampler(*lib);
  ASSERT_TRUE(sampler.Init().ok());
  Snapshot first = sampler.Poll(0);
  ASSERT_EQ(first.devices[0].processes.size(), 1u);
  // NOT_FOUND (nothing newer than the timestamp) is not an error and not zero usage.
  EXPECT_TRUE(first.devices[0].status.ok()) << first.devices[0].status.message();
  // Samples before the process listed belong to no one; the first pass reads what exists.
  SetTime(1796405232.1);
  Snapshot sampled = sampler.Poll(0.5);
  ASSERT_EQ(sampled.devices[0].processes.size(), 1u);
  EXPECT_EQ(sampled.devices[0].processes[0].busy_basis, BusyBasis::kSampled);
  EXPECT_NEAR(sampled.devices[0].processes[0].busy_ratio, 0.44, 1e-9);
  // Three passes in the same instant: no new sample (NOT_FOUND), the figure is held, then idle.
  Snapshot held = sampler.Poll(0.6);
  EXPECT_EQ(held.devices[0].processes[0].busy_basis, BusyBasis::kHeld);
  EXPECT_NEAR(held.devices[0].processes[0].busy_ratio, 0.44, 1e-9);
  sampler.Poll(0.7);
  Snapshot idle = sampler.Poll(0.8);
  EXPECT_EQ(idle.devices[0].processes[0].busy_basis, BusyBasis::kConfirmedIdle);
  EXPECT_EQ(idle.devices[0].processes[0].busy_ratio, 0);
}

// Replays the whole H200 recording, one pass every 0.5 s, and averages each process's figures
// over its busy window (phases.csv).
struct Phase {
  std::string tag;
  unsigned pid;
  double start, end;
};
std::vector<Phase> ReadPhases() {
  std::vector<Phase> out;
  std::ifstream in(kFixtures + "/phases.csv");
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) {
    std::stringstream ss(line);
    std::vector<std::string> c;
    for (std::string cell; std::getline(ss, cell, ',');) c.push_back(cell);
    out.push_back(
        {c[0], static_cast<unsigned>(std::stoul(c[1])), std::stod(c[5]), std::stod(c[6])});
  }
  return out;
}

TEST_F(FakeNvmlTest, TheH200RecordingsComeOutAsTheTruthNotAsAnEqualSplit) {
  ::setenv("FAKE_NVML_DIR", kFixtures.c_str(), 1);
  std::unique_ptr<nvml::Library> lib = Open();
  ASSERT_NE(lib, nullptr);
  const std::vector<Phase> phases = ReadPhases();
  ASSERT_EQ(phases.size(), 6u);
  SetTime(1796405222.6);
  GpuSampler sampler(*lib);
  ASSERT_TRUE(sampler.Init().ok());
  struct Mean {
    double memory = 0, busy = 0, sm = 0;
    int n = 0, sm_n = 0;
    std::map<std::string, int> methods;
  };
  std::map<unsigned, Mean> mean;
  for (double t = 1796405222.6; t < 1796405327; t += 0.5) {
    SetTime(t);
    const Snapshot snap = sampler.Poll(t);
    ASSERT_TRUE(snap.devices[0].status.ok()) << snap.devices[0].status.message();
    for (const ProcessReading& p : snap.devices[0].processes) {
      for (const Phase& ph : phases) {
        // Inside the busy window, past the first second (the first samples straddle it).
        if (ph.pid != p.pid || t < ph.start + 1 || t > ph.end) continue;
        Mean& m = mean[p.pid];
        m.memory += p.memory_used_bytes;
        m.busy += p.busy_ratio;
        ++m.n;
        if (p.sm_active_ratio) {
          m.sm += *p.sm_active_ratio;
          ++m.sm_n;
          ++m.methods[p.method];
        }
      }
    }
  }
  auto avg = [&](unsigned pid, double Mean::*field, bool sm) {
    const Mean& m = mean[pid];
    return m.*field / (sm ? m.sm_n : m.n);
  };
  const unsigned e1 = 578, e2 = 579, one_thread = 524;
  ASSERT_GT(mean[e1].n, 30);
  ASSERT_GT(mean[e2].sm_n, 30);
  // Memory per process: 9,284 and 42,052 MiB, where an equal split gives each ~26 GiB.
  EXPECT_NEAR(avg(e1, &Mean::memory, false) / kMiB, 9284, 1);
  EXPECT_NEAR(avg(e2, &Mean::memory, false) / kMiB, 42052, 1);
  // Busy time ~30 % and ~44 %.
  EXPECT_NEAR(avg(e1, &Mean::busy, false), 0.30, 0.03);
  EXPECT_NEAR(avg(e2, &Mean::busy, false), 0.44, 0.03);
  // The device's GPM SM activity (~64 %) split by busy time: ~26 % and ~38 %.
  EXPECT_NEAR(avg(e1, &Mean::sm, true), 0.26, 0.03);
  EXPECT_NEAR(avg(e2, &Mean::sm, true), 0.38, 0.03);
  EXPECT_GT(mean[e2].methods["busy-proportional"], 20) << "both busy, neither calibrated alone";
  // One thread spinning: busy ~100 %, SM activity under 2 %.
  EXPECT_GT(avg(one_thread, &Mean::busy, false), 0.9);
  EXPECT_LT(avg(one_thread, &Mean::sm, true), 0.02);
  EXPECT_GT(mean[one_thread].methods["alone"], 10);
  // Whole-GPU phases alone: SM activity as GPM read it (21 % and 68 %).
  EXPECT_NEAR(avg(466, &Mean::sm, true), 0.21, 0.04);
  EXPECT_NEAR(avg(495, &Mean::sm, true), 0.68, 0.04);
  // Held but idle: no SM figure above zero.
  EXPECT_LT(avg(553, &Mean::sm, true), 0.01);
}

// The H200 under CUDA MPS: each client's memory per pid, every utilization sample the server's
// (pid 488). Without knowing MPS the clients would read idle and the server would take all the
// SM activity; knowing it, the clients share the device's activity, flagged as an equal split.
TEST_F(FakeNvmlTest, UnderMpsTheClientsShareTheDevicesSmActivityAndAreNeverIdle) {
  ::setenv("FAKE_NVML_DIR", (kFixtures + "/mps").c_str(), 1);
  ::setenv("FAKE_NVML_PROCESS_NAMES", "488=nvidia-cuda-mps-server", 1);
  std::unique_ptr<nvml::Library> lib = Open();
  ASSERT_NE(lib, nullptr);
  GpuSampler sampler(*lib);
  SetTime(1796408005);
  ASSERT_TRUE(sampler.Init().ok());
  struct Mean {
    double memory = 0, sm = 0, device_sm = 0;
    int n = 0;
    std::map<std::string, int> methods;
    bool busy_known = false;
  };
  std::map<unsigned, Mean> mean;
  // M1 (8 GiB, 20 %) and M2 (40 GiB, 50 %) together, 1796408010.3-1796408026.3.
  for (double t = 1796408005; t < 1796408026; t += 0.5) {
    SetTime(t);
    const Snapshot snap = sampler.Poll(t);
    ASSERT_TRUE(snap.devices[0].status.ok()) << snap.devices[0].status.message();
    if (t < 1796408012) continue;
    for (const ProcessReading& p : snap.devices[0].processes) {
      Mean& m = mean[p.pid];
      m.memory += p.memory_used_bytes;
      m.sm += p.sm_active_ratio.value_or(0);
      m.device_sm += snap.devices[0].sm_active_ratio.value_or(0);
      ++m.n;
      ++m.methods[p.method];
      m.busy_known |= p.busy_basis != BusyBasis::kUnknown;
    }
  }
  for (unsigned client : {454u, 455u}) {
    const Mean& m = mean[client];
    ASSERT_GT(m.n, 20) << client;
    EXPECT_EQ(m.methods.at("mps-equal-split"), m.n) << client;
    EXPECT_FALSE(m.busy_known) << "NVML gives MPS clients no samples: unknown, never idle";
    EXPECT_NEAR(m.sm / m.n, m.device_sm / m.n / 2, 1e-9) << client;
    EXPECT_GT(m.sm / m.n, 0.05) << client;
  }
  EXPECT_NEAR(mean[454].memory / mean[454].n / kMiB, 8930, 400);
  EXPECT_NEAR(mean[455].memory / mean[455].n / kMiB, 41570, 600);
  const Mean& server = mean[488];
  EXPECT_EQ(server.methods.at("mps-server"), server.n);
  EXPECT_EQ(server.sm, 0) << "the server runs no kernels of its own";
  EXPECT_TRUE(server.busy_known) << "its samples are the device's busy time";
}

TEST_F(FakeNvmlTest, ASoloCalibratedSplitGivesTheOneThreadJobNoCreditForSmsItNeverUsed) {
  // A recording in the shape of the H200's: a full-SM job (pid 2) alone at busy 50 % / SM 34 %,
  // then a one-thread job (pid 1) alone at busy 99 % / SM 1 % (pid 2 idle, still holding its
  // memory), then both at once (SM 35 %).
  testing::ScopedTempDir rec;
  std::ofstream dev(rec.Path("nvml_device.csv")), proc(rec.Path("nvml_process.csv")),
      gpm(rec.Path("nvml_gpm.csv"));
  dev << "t,mem_used_mib,mem_total_mib,util_gpu_pct,util_mem_pct\n";
  proc << "t,pid,used_mib,sm_util_pct,mem_util_pct\n";
  gpm << "t,sm_active,sm_occupancy,graphics_active,dram_bw_util,tensor_any_active\n";
  for (int i = 0; i < 60; ++i) {
    const double t = 1000 + 0.5 * i;
    const int phase = i / 20;  // 0: pid 2 alone, 1: pid 1 alone, 2: both
    dev << t << ",40000,143771,99,0\n";
    proc << t << ",2,20000," << (phase == 1 ? ",\n" : "50,10\n");
    if (phase != 0) proc << t << ",1,20000,99,0\n";
    gpm << t << "," << (phase == 0 ? 34 : phase == 1 ? 1 : 35) << ",5,0,0,0\n";
  }
  dev.close();
  proc.close();
  gpm.close();
  ::setenv("FAKE_NVML_DIR", rec.dir().c_str(), 1);
  std::unique_ptr<nvml::Library> lib = Open();
  ASSERT_NE(lib, nullptr);
  GpuSampler sampler(*lib);
  ASSERT_TRUE(sampler.Init().ok());
  std::map<unsigned, double> shared_sm;
  std::map<unsigned, std::string> method;
  for (int i = 0; i < 60; ++i) {
    const double t = 1000 + 0.5 * i + 0.01;
    SetTime(t);
    const Snapshot snap = sampler.Poll(t);
    if (i < 45) continue;  // both running, a few passes in
    for (const ProcessReading& p : snap.devices[0].processes) {
      ASSERT_TRUE(p.sm_active_ratio) << p.pid;
      shared_sm[p.pid] = *p.sm_active_ratio;
      method[p.pid] = p.method;
      EXPECT_LE(p.sm_active_lower_ratio, *p.sm_active_ratio);
      EXPECT_LE(*p.sm_active_ratio, p.sm_active_upper_ratio);
    }
  }
  EXPECT_EQ(method[1], "solo-calibrated");
  // Busy-proportional would give the one-thread job 0.35 × 99/149 = 23 %.
  EXPECT_LT(shared_sm[1], 0.02);
  EXPECT_NEAR(shared_sm[2], 0.34, 0.02);
}

// ---- the agent's series ----

TEST_F(FakeNvmlTest, ProcessesAreLabelledByTheirPodsCgroup) {
  ::setenv("FAKE_NVML_DIR", kFixtures.c_str(), 1);
  testing::ScopedTempDir proc;
  const std::string id(64, 'b');
  for (const auto& [pid, uid] :
       std::map<int, std::string>{{578, "11111111_2222_3333_4444_555555555555"},
                                  {579, "66666666_7777_8888_9999_000000000000"}}) {
    std::filesystem::create_directories(proc.Path(std::to_string(pid)));
    std::ofstream(proc.Path(std::to_string(pid) + "/cgroup"))
        << "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" << uid
        << ".slice/cri-containerd-" << id << ".scope\n";
  }
  NodeAgentOptions options;
  options.nvml_library = GPUVPA_FAKE_NVML;
  options.proc_root = proc.dir().string();
  NodeAgent agent(options);
  ASSERT_TRUE(agent.Start().ok());  // (nvmlInit: the fake's clock is pinned below)
  for (double t = 1796405310; t < 1796405312; t += 0.5) {
    SetTime(t);
    ASSERT_TRUE(agent.PollOnce(t).ok());
  }
  EXPECT_EQ(agent.HandleHttp("/readyz").status, 200);
  const std::string page = agent.HandleHttp("/metrics").body;
  EXPECT_NE(page.find("pod_uid=\"11111111-2222-3333-4444-555555555555\""), std::string::npos)
      << page;
  EXPECT_NE(page.find("gpuvpa_container_gpu_memory_used_bytes{container=\"\",container_id=\"" + id +
                      "\""),
            std::string::npos)
      << page;
  EXPECT_NE(page.find("gpuvpa_gpu_sm_active_ratio{gpu=\"0\",gpu_instance=\"\",gpu_uuid=\"GPU-"),
            std::string::npos);
}

// ---- the binary ----

std::string Curl(int port, const std::string& path, int* rc) {
  return testing::RunShell(
      "curl -s -w ' %{http_code}' http://127.0.0.1:" + std::to_string(port) + path, rc);
}

TEST(NodeAgentBinaryTest, ServesMetricsPromtoolAcceptsAndTellsWhyItIsNotReady) {
  const std::string bin = std::string(GPUVPA_BIN_DIR) + "/gpuvpa-node-agent";
  int rc = 0;
  const std::string help = testing::RunShell(bin + " --help", &rc);
  EXPECT_EQ(rc, 0);
  EXPECT_NE(help.find("--nvml-library"), std::string::npos);
  const std::string typo = testing::RunShell(bin + " --label-by pods", &rc);
  EXPECT_EQ(rc, 2) << typo;
  testing::ScopedTempDir dir;
  // With the fake NVML replaying the shared phase at 4× speed.
  const int port = testing::FreeLocalPort();
  pid_t pid = testing::SpawnProcess(
      {"env", "FAKE_NVML_DIR=" + kFixtures, "FAKE_NVML_START=1796405302", "FAKE_NVML_SPEED=2", bin,
       "--nvml-library", GPUVPA_FAKE_NVML, "--label-by", "pid", "--interval", "0.25",
       "--listen-http", "127.0.0.1:" + std::to_string(port)},
      dir.Path("agent.log"));
  ASSERT_GT(pid, 0);
  std::string ready;
  for (int i = 0; i < 100; ++i) {
    ready = Curl(port, "/readyz", &rc);
    if (ready.find(" 200") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_NE(ready.find("ready\n 200"), std::string::npos)
      << ready << testing::ReadTextFile(dir.Path("agent.log"));
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  const std::string page =
      testing::RunShell("curl -s http://127.0.0.1:" + std::to_string(port) + "/metrics", &rc);
  std::ofstream(dir.Path("metrics.txt")) << page;
  EXPECT_NE(page.find("gpuvpa_container_gpu_busy_ratio{"), std::string::npos) << page;
  EXPECT_NE(page.find("pid=\"578\""), std::string::npos) << page;
  EXPECT_NE(page.find("pid=\"579\""), std::string::npos) << page;
  const std::string check =
      testing::RunShell("promtool check metrics < " + dir.Path("metrics.txt"), &rc);
  EXPECT_EQ(rc, 0) << check;
  testing::KillProcess(pid);

  // Naming pods needs the node: no --node-name and no $NODE_NAME is a usage error naming both.
  const std::string nameless = testing::RunShell("env -u NODE_NAME " + bin + " 2>&1", &rc);
  EXPECT_EQ(rc, 2) << nameless;
  EXPECT_NE(nameless.find("--node-name"), std::string::npos) << nameless;
  EXPECT_NE(nameless.find("$NODE_NAME"), std::string::npos) << nameless;

  // No NVML: alive, not ready, and the reason names the library.
  const int port2 = testing::FreeLocalPort();
  pid_t absent = testing::SpawnProcess(
      {bin, "--label-by", "pid", "--nvml-library", "/nonexistent/libnvidia-ml.so.1",
       "--listen-http", "127.0.0.1:" + std::to_string(port2)},
      dir.Path("absent.log"));
  ASSERT_TRUE(testing::WaitForTcpPort(port2, std::chrono::seconds(10)));
  const std::string not_ready = Curl(port2, "/readyz", &rc);
  EXPECT_NE(not_ready.find("/nonexistent/libnvidia-ml.so.1"), std::string::npos) << not_ready;
  EXPECT_NE(not_ready.find(" 503"), std::string::npos) << not_ready;
  EXPECT_NE(Curl(port2, "/healthz", &rc).find(" 200"), std::string::npos);
  testing::KillProcess(absent);
}

}  // namespace
}  // namespace gpuvpa::agent

// ---- the kubelet's pod-resources API ----

namespace gpuvpa::agent {
namespace {

using testing::AddContainer;
using testing::FakeKubelet;
using testing::ServeKubelet;

TEST(PodResourcesTest, TheKubeletsListOverItsUnixSocketSaysWhoHoldsEachDevice) {
  testing::ScopedTempDir dir;
  const std::string socket = dir.Path("kubelet.sock");
  FakeKubelet kubelet;
  // A whole GPU, two time-sliced replicas of one GPU, a MIG device, and a CPU-only resource.
  AddContainer(kubelet.answer, "ml", "trainer-0", "main", "nvidia.com/gpu",
               {"GPU-11111111-2222-3333-4444-555555555555"});
  AddContainer(kubelet.answer, "ml", "infer-a", "server", "nvidia.com/gpu.shared",
               {"GPU-66666666-7777-8888-9999-000000000000::0"});
  AddContainer(kubelet.answer, "ml", "infer-b", "server", "nvidia.com/gpu.shared",
               {"GPU-66666666-7777-8888-9999-000000000000::3"});
  AddContainer(kubelet.answer, "ml", "scorer", "main", "nvidia.com/mig-3g.40gb",
               {"MIG-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"});
  AddContainer(kubelet.answer, "ml", "scorer", "sidecar", "example.com/nic", {"nic0"});
  std::unique_ptr<grpc::Server> server = ServeKubelet(kubelet, socket);
  ASSERT_NE(server, nullptr);

  Result<PodDevices> table = ListPodDevices(socket);
  ASSERT_TRUE(table.ok()) << table.status().message();
  EXPECT_EQ(table->device_count(), 3u) << "nvidia.com resources only";
  const auto& whole = table->HoldersOf("GPU-11111111-2222-3333-4444-555555555555");
  ASSERT_EQ(whole.size(), 1u);
  EXPECT_EQ(whole[0].pod, "trainer-0");
  EXPECT_EQ(whole[0].replica, -1);
  const auto& shared = table->HoldersOf("GPU-66666666-7777-8888-9999-000000000000");
  ASSERT_EQ(shared.size(), 2u);
  EXPECT_EQ(shared[0].pod, "infer-a");
  EXPECT_EQ(shared[0].replica, 0);
  EXPECT_EQ(shared[1].replica, 3);
  EXPECT_EQ(shared[1].resource, "nvidia.com/gpu.shared");
  const auto& mig = table->HoldersOf("MIG-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee");
  ASSERT_EQ(mig.size(), 1u);
  EXPECT_EQ(mig[0].container, "main");
  EXPECT_TRUE(table->HoldersOf("GPU-unknown").empty());
  server->Shutdown();

  // No kubelet: UNAVAILABLE naming the socket, never an empty table.
  Result<PodDevices> down = ListPodDevices(dir.Path("absent.sock"), std::chrono::milliseconds(300));
  ASSERT_FALSE(down.ok());
  EXPECT_EQ(down.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(down.status().message().find("absent.sock"), std::string::npos);
}

TEST(PodResourcesTest, EntriesWithoutNamesOrWithBadReplicaIdsAreSkippedAndNamed) {
  ::v1::ListPodResourcesResponse r;
  AddContainer(r, "ml", "", "main", "nvidia.com/gpu", {"GPU-a"});
  AddContainer(r, "ml", "p", "main", "nvidia.com/gpu", {"GPU-b::x", "GPU-c::", ""});
  AddContainer(r, "ml", "p", "ok", "nvidia.com/gpu", {"GPU-d::2"});
  std::vector<std::string> issues;
  const PodDevices table = PodDevices::FromResponse(r, &issues);
  EXPECT_EQ(table.device_count(), 1u);
  EXPECT_EQ(table.HoldersOf("GPU-d").size(), 1u);
  ASSERT_EQ(issues.size(), 4u);
  EXPECT_NE(issues[1].find("\"GPU-b::x\" has no replica number"), std::string::npos) << issues[1];
}

// ---- owners named through the API and the pod-resources table ----

// Pod A's status names its container; pod B's container has just started (its status has no
// container id yet): the kubelet's table names it. A pod on another node is never asked for.
// A GPU node as the agent sees it: the API double with this node's two pods on the fake's
// device 0 (trainer-0 named by its container status, embed-0 only by the kubelet's table) and
// one on another node, the processes' cgroups in a /proc tree (the recording's pair, pids 578
// and 579), and the kubelet's pod-resources server on a unix socket.
struct NamedGpuNode {
  const std::string gpu = "GPU-fa4e0000-0000-4000-8000-000000000000";  // the fake's device 0
  testing::KubeTestCluster cluster;
  testing::ScopedTempDir proc;
  FakeKubelet kubelet;
  std::unique_ptr<grpc::Server> server;
  const std::string id_a = std::string(64, 'a'), id_b = std::string(64, 'b');
  std::string uid_a, uid_b;

  NamedGpuNode() {
    // The agent's RBAC as its DaemonSet binds it (get and list pods, nothing else).
    cluster.api().AddUser("agent-token", testing::KubeTestCluster::UserFromManifests(
                                             "gpuvpa-node-agent", "node-agent"));
    auto pod = [&](const std::string& name, const std::string& container, const std::string& node,
                   const std::string& id) {
      nlohmann::json p = testing::KubeTestCluster::Pod("ml-dev", name, name, container);
      p["spec"]["nodeName"] = node;
      if (!id.empty()) p["status"]["containerStatuses"][0]["containerID"] = "containerd://" + id;
      return cluster.api().Seed(p)["metadata"]["uid"].get<std::string>();
    };
    uid_a = pod("trainer-0", "trainer", "gpu-node-1", id_a);
    uid_b = pod("embed-0", "embedder", "gpu-node-1", "");
    pod("elsewhere-0", "main", "gpu-node-2", std::string(64, 'c'));
    for (const auto& [pid, uid, id] :
         {std::tuple{578, uid_a, id_a}, std::tuple{579, uid_b, id_b}}) {
      std::string slice = uid;
      std::replace(slice.begin(), slice.end(), '-', '_');
      std::filesystem::create_directories(proc.Path(std::to_string(pid)));
      std::ofstream(proc.Path(std::to_string(pid) + "/cgroup"))
          << "0::/kubepods.slice/kubepods-pod" << slice << ".slice/cri-containerd-" << id
          << ".scope\n";
    }
    AddContainer(kubelet.answer, "ml-dev", "trainer-0", "trainer", "nvidia.com/gpu.shared",
                 {gpu + "::0"});
    AddContainer(kubelet.answer, "ml-dev", "embed-0", "embedder", "nvidia.com/gpu.shared",
                 {gpu + "::1"});
    server = ServeKubelet(kubelet, proc.Path("kubelet.sock"));
  }
  ~NamedGpuNode() {
    if (server) server->Shutdown();
  }

  // The agent as its DaemonSet runs it, with `token`'s rights; started.
  std::unique_ptr<NodeAgent> Agent(const std::string& token) {
    Result<KubeConnection> connection = KubeconfigConnection(cluster.Kubeconfig(token));
    EXPECT_TRUE(connection.ok()) << connection.status().message();
    Result<std::unique_ptr<KubeClient>> client = KubeClient::Create(*connection);
    EXPECT_TRUE(client.ok()) << client.status().message();
    NodeAgentOptions options;
    options.nvml_library = GPUVPA_FAKE_NVML;
    options.proc_root = proc.dir().string();
    options.pod_resources_socket = proc.Path("kubelet.sock");
    options.pod_resources_refresh_s = 0;  // every pass
    options.node_name = "gpu-node-1";
    auto agent = std::make_unique<NodeAgent>(
        options, std::make_unique<PodDirectory>(std::move(*client), "gpu-node-1"));
    EXPECT_TRUE(agent->Start().ok());
    return agent;
  }
};

TEST_F(FakeNvmlTest, ProcessesAreNamedThroughTheApiAndWhoHoldsTheDevice) {
  ::setenv("FAKE_NVML_DIR", kFixtures.c_str(), 1);
  NamedGpuNode node;
  ASSERT_NE(node.server, nullptr);
  testing::KubeTestCluster& cluster = node.cluster;
  FakeKubelet& kubelet = node.kubelet;
  const std::string& gpu = node.gpu;
  const std::string &id_a = node.id_a, &id_b = node.id_b, &uid_a = node.uid_a;
  auto run = [&](const std::string& token, double seconds) {
    std::unique_ptr<NodeAgent> agent = node.Agent(token);
    for (double t = 1796405310; t < 1796405310 + seconds; t += 0.5) {
      SetTime(t);
      EXPECT_TRUE(agent->PollOnce(t).ok());
    }
    return agent;
  };
  cluster.api().ClearRequests();
  std::unique_ptr<NodeAgent> agent = run("agent-token", 2);
  std::string page = agent->HandleHttp("/metrics").body;
  const std::string memory = "gpuvpa_container_gpu_memory_used_bytes{";
  EXPECT_NE(
      page.find(memory + "container=\"trainer\",container_id=\"" + id_a +
                "\",gpu=\"0\",gpu_instance=\"\",gpu_uuid=\"" + gpu +
                "\",method=\"busy-proportional\",model_name=\"NVIDIA H200\",namespace=\"ml-dev\","
                "node=\"gpu-node-1\",pod=\"trainer-0\",pod_uid=\"" +
                uid_a + "\"}"),
      std::string::npos)
      << page;
  EXPECT_NE(page.find("container=\"embedder\",container_id=\"" + id_b), std::string::npos)
      << "named by the pod-resources table\n"
      << page;
  EXPECT_NE(page.find("gpuvpa_gpu_unallocated_processes{gpu=\"0\","
                      "gpu_instance=\"\",gpu_uuid=\"" +
                      gpu + "\",model_name=\"NVIDIA H200\",node=\"gpu-node-1\"} 0"),
            std::string::npos)
      << page;
  EXPECT_NE(page.find("gpuvpa_node_agent_unresolved_processes 0"), std::string::npos) << page;
  // One list of this node's pods served every pass: the first one (both pods known).
  int lists = 0;
  for (const testing::KubeRequestRecord& r : cluster.api().requests()) {
    if (r.path != "/api/v1/pods") continue;
    ++lists;
    EXPECT_NE(r.query.find("fieldSelector=spec.nodeName%3Dgpu-node-1"), std::string::npos)
        << r.query;
    EXPECT_EQ(r.user, "system:serviceaccount:gpuvpa-node-agent:gpuvpa-node-agent");
    EXPECT_EQ(r.status, 200);
  }
  EXPECT_EQ(lists, 1);

  // The table now gives trainer-0 a share of another GPU: its process on this one uses a GPU
  // its container was not allocated (NVIDIA_VISIBLE_DEVICES=all, say), and is counted.
  ::v1::ListPodResourcesResponse moved;
  AddContainer(moved, "ml-dev", "trainer-0", "trainer", "nvidia.com/gpu.shared",
               {"GPU-fa4e0000-0000-4000-8000-000000000001::0"});
  AddContainer(moved, "ml-dev", "embed-0", "embedder", "nvidia.com/gpu.shared", {gpu + "::1"});
  kubelet.Replace(moved);
  std::unique_ptr<NodeAgent> again = run("agent-token", 1);
  page = again->HandleHttp("/metrics").body;
  EXPECT_NE(page.find("gpuvpa_gpu_unallocated_processes{gpu=\"0\","
                      "gpu_instance=\"\",gpu_uuid=\"" +
                      gpu + "\",model_name=\"NVIDIA H200\",node=\"gpu-node-1\"} 1"),
            std::string::npos)
      << page;
  EXPECT_NE(page.find("container=\"trainer\",container_id=\"" + id_a), std::string::npos)
      << "still measured and named\n"
      << page;

  // An agent whose token may not list pods: the series keep pod_uid and container_id, and
  // the processes are counted as unresolved.
  cluster.api().AddUser("other-token", {"system:serviceaccount:gpuvpa:other", {}});
  std::unique_ptr<NodeAgent> blind = run("other-token", 1);
  page = blind->HandleHttp("/metrics").body;
  EXPECT_NE(page.find("gpuvpa_node_agent_unresolved_processes 2"), std::string::npos) << page;
  EXPECT_NE(page.find("namespace=\"\",node=\"gpu-node-1\",pod=\"\",pod_uid=\"" + uid_a + "\""),
            std::string::npos)
      << page;
}

// The whole path, real parts only: the agent on the node above (the fake NVML replaying the
// H200's time-sliced pair in real time) serves /metrics, a real Prometheus scrapes it every
// 500 ms, and the recommender daemon, with the agent named as a source as the shipped config
// does, reads what Prometheus stored. Each pod gets its own memory (9.3 and 42.1 GiB), not
// the device's 52 GiB split in two, and the busy-proportional basis of its SM figures.
TEST_F(FakeNvmlTest, TheRecommenderReadsTheAgentThroughARealPrometheusScrape) {
  ::setenv("FAKE_NVML_DIR", kFixtures.c_str(), 1);
  ::setenv("FAKE_NVML_START", "1796405303", 1);  // both processes of the pair busy
  NamedGpuNode node;
  ASSERT_NE(node.server, nullptr);
  std::unique_ptr<NodeAgent> agent = node.Agent("agent-token");
  Result<std::unique_ptr<HttpServer>> http = HttpServer::Start(
      "127.0.0.1:0", [&agent](const std::string& path) { return agent->HandleHttp(path); });
  ASSERT_TRUE(http.ok()) << http.status().message();
  std::atomic<bool> stop{false};
  std::atomic<int> failed_passes{0};
  std::thread passes([&] {
    while (!stop) {
      if (!agent->PollOnce(UnixNowSeconds()).ok()) ++failed_passes;
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
  });
  testing::ScopedTempDir dir;
  testing::PrometheusServer prometheus(dir.dir().string());
  prometheus.AddScrapeTarget("gpuvpa-node-agent", (*http)->port(), 0.5);
  std::string error;
  ASSERT_TRUE(prometheus.Start(&error)) << error;
  const double scraped_from = UnixNowSeconds();
  std::this_thread::sleep_for(std::chrono::seconds(10));

  const std::string config =
      "ledger:\n  path: " + dir.Path("ledger.db") +
      "\nprices:\n  - gpu_model: H200-141GB\n    usd_per_gpu_hour: 4\n"
      "recommender:\n  prometheus:\n    server_address: " +
      prometheus.url() +
      "\n    step_seconds: 1\n    chunk_seconds: 600\n    lag_seconds: 1\n"
      "  node_agent: {enabled: true}\n  history_days: 0.01\n  checkpoint: " +
      dir.Path("checkpoint") +
      "\n  min_history_hours: 0\n  listen_http: 127.0.0.1:0\n  listen_grpc: 127.0.0.1:0\n";
  Result<GpuvpaConfig> gpuvpa = ParseConfig(config);
  ASSERT_TRUE(gpuvpa.ok()) << gpuvpa.status().message();
  Result<recommender::DaemonConfig> daemon_config =
      recommender::ParseDaemonConfig(gpuvpa->recommender_yaml, "test");
  ASSERT_TRUE(daemon_config.ok()) << daemon_config.status().message();
  Result<std::unique_ptr<recommender::RecommenderDaemon>> daemon =
      recommender::RecommenderDaemon::Create(*daemon_config, *std::move(gpuvpa));
  ASSERT_TRUE(daemon.ok()) << daemon.status().message();
  const Status polled = (*daemon)->PollOnce(UnixNowSeconds());
  stop = true;
  passes.join();
  ASSERT_TRUE(polled.ok()) << polled.message();
  EXPECT_EQ(failed_passes, 0);
  std::map<std::string, v1::Recommendation> by_container;
  for (const auto& [key, rec] : (*daemon)->snapshot()->by_key)
    by_container[rec.identity().container()] = rec;
  ASSERT_EQ(by_container.size(), 2u) << "trainer and embedder, nobody else";
  const double mib = 1024.0 * 1024.0;
  const v1::Recommendation& a = by_container["trainer"];
  const v1::Recommendation& b = by_container["embedder"];
  EXPECT_EQ(a.identity().namespace_name(), "ml-dev");
  EXPECT_EQ(a.identity().gpu_model(), "H200-141GB");
  EXPECT_EQ(a.identity().allocation(), "nvidia.com/gpu.shared=1/2");
  EXPECT_NEAR(a.vram_history_peak_bytes() / mib, 9284, 50);
  EXPECT_NEAR(b.vram_history_peak_bytes() / mib, 42052, 50);
  for (const v1::Recommendation* r : {&a, &b}) {
    EXPECT_TRUE(r->per_process_usage());
    EXPECT_FALSE(r->shared_device_estimate());
    EXPECT_EQ(r->sm_basis(), "sm_active_by_busy_share") << "both busy, neither learned alone";
    EXPECT_GE(r->sample_count(), 3u) << "scraped since " << scraped_from;
  }
  EXPECT_LT(a.sm_p90_ratio(), b.sm_p90_ratio()) << "30 % busy beside 44 %";
}

}  // namespace
}  // namespace gpuvpa::agent
