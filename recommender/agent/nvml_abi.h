// The part of NVML's C ABI the node agent calls, declared here so that nothing includes a
// driver header or links against a driver: the agent dlopen()s libnvidia-ml.so.1 and resolves
// each function by name (nvml_library.h). Layouts follow NVML's public API reference (structs
// by value, in declaration order); the fake library of the tests implements the same ABI.
#pragma once

#include <cstdint>

extern "C" {

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st* nvmlDevice_t;
typedef struct nvmlGpmSample_st* nvmlGpmSample_t;

struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

struct nvmlUtilization_t {
  unsigned int gpu;
  unsigned int memory;
};

// nvmlProcessInfo_t of the _v3 calls (the _v2 layout is its first four fields).
struct nvmlProcessInfo_t {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;  // 0xFFFFFFFF when MIG is off
  unsigned int computeInstanceId;
  unsigned long long usedGpuCcProtectedMemory;
};

struct nvmlProcessUtilizationSample_t {
  unsigned int pid;
  unsigned long long timeStamp;  // CPU timestamp in microseconds
  unsigned int smUtil;
  unsigned int memUtil;
  unsigned int encUtil;
  unsigned int decUtil;
};

struct nvmlGpmSupport_t {
  unsigned int version;
  unsigned int isSupportedDevice;
};

struct nvmlGpmMetric_t {
  unsigned int metricId;
  nvmlReturn_t nvmlReturn;
  double value;
  struct {
    char* shortName;
    char* longName;
    char* unit;
  } metricInfo;
};

// The library reads and writes only metrics[0 .. numMetrics): a short array is enough.
struct nvmlGpmMetricsGet_t {
  unsigned int version;
  unsigned int numMetrics;
  nvmlGpmSample_t sample1;
  nvmlGpmSample_t sample2;
  nvmlGpmMetric_t metrics[4];
};

}  // extern "C"

namespace gpuvpa::nvml {

// nvmlReturn_t values the agent tells apart.
inline constexpr nvmlReturn_t kSuccess = 0;
inline constexpr nvmlReturn_t kUninitialized = 1;
inline constexpr nvmlReturn_t kInvalidArgument = 2;
inline constexpr nvmlReturn_t kNotSupported = 3;
inline constexpr nvmlReturn_t kNoPermission = 4;
inline constexpr nvmlReturn_t kNotFound = 6;
inline constexpr nvmlReturn_t kInsufficientSize = 7;
inline constexpr nvmlReturn_t kDriverNotLoaded = 9;
inline constexpr nvmlReturn_t kGpuIsLost = 15;
inline constexpr nvmlReturn_t kUnknown = 999;

inline constexpr unsigned int kGpmSupportVersion = 1;
inline constexpr unsigned int kGpmMetricsGetVersion = 1;
// NVML_GPM_METRIC_SM_UTIL (= DCGM's PROF_SM_ACTIVE) and NVML_GPM_METRIC_SM_OCCUPANCY.
inline constexpr unsigned int kGpmSmUtil = 2;
inline constexpr unsigned int kGpmSmOccupancy = 3;
inline constexpr unsigned int kUuidBufferSize = 96;
inline constexpr unsigned int kNameBufferSize = 96;  // NVML_DEVICE_NAME_V2_BUFFER_SIZE
inline constexpr unsigned int kNoGpuInstance = 0xFFFFFFFFu;

}  // namespace gpuvpa::nvml
