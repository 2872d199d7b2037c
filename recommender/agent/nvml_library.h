// NVML loaded at run time: dlopen("libnvidia-ml.so.1") (or the path given), each function
// resolved by name, nvmlInit_v2 called. A missing library or a missing required function is a
// clear UNAVAILABLE naming it (the agent then reports not ready); GPM and MIG functions are
// optional (older drivers lack them; their absence reads as "not supported").
#pragma once

#include <memory>
#include <string>

#include "core/base/status.h"
#include "recommender/agent/nvml_abi.h"

namespace gpuvpa::nvml {

struct Functions {
  // Required.
  nvmlReturn_t (*Init)() = nullptr;
  nvmlReturn_t (*Shutdown)() = nullptr;
  const char* (*ErrorString)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*DeviceGetCount)(unsigned int*) = nullptr;
  nvmlReturn_t (*DeviceGetHandleByIndex)(unsigned int, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*DeviceGetUUID)(nvmlDevice_t, char*, unsigned int) = nullptr;
  nvmlReturn_t (*DeviceGetMemoryInfo)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
  nvmlReturn_t (*DeviceGetUtilizationRates)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;
  nvmlReturn_t (*DeviceGetComputeRunningProcesses)(nvmlDevice_t, unsigned int*,
                                                   nvmlProcessInfo_t*) = nullptr;
  nvmlReturn_t (*DeviceGetProcessUtilization)(nvmlDevice_t, nvmlProcessUtilizationSample_t*,
                                              unsigned int*, unsigned long long) = nullptr;
  // Optional (null when the library lacks them).
  nvmlReturn_t (*DeviceGetName)(nvmlDevice_t, char*, unsigned int) = nullptr;
  nvmlReturn_t (*SystemGetProcessName)(unsigned int, char*, unsigned int) = nullptr;
  nvmlReturn_t (*GpmQueryDeviceSupport)(nvmlDevice_t, nvmlGpmSupport_t*) = nullptr;
  nvmlReturn_t (*GpmSampleAlloc)(nvmlGpmSample_t*) = nullptr;
  nvmlReturn_t (*GpmSampleFree)(nvmlGpmSample_t) = nullptr;
  nvmlReturn_t (*GpmSampleGet)(nvmlDevice_t, nvmlGpmSample_t) = nullptr;
  nvmlReturn_t (*GpmMetricsGet)(nvmlGpmMetricsGet_t*) = nullptr;
  // MIG (all of them, or MIG mode is not read).
  nvmlReturn_t (*DeviceGetMigMode)(nvmlDevice_t, unsigned int*, unsigned int*) = nullptr;
  nvmlReturn_t (*DeviceGetMaxMigDeviceCount)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*DeviceGetMigDeviceHandleByIndex)(nvmlDevice_t, unsigned int,
                                                  nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*DeviceGetGpuInstanceId)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*GpmMigSampleGet)(nvmlDevice_t, unsigned int, nvmlGpmSample_t) = nullptr;
};

class Library {
 public:
  // Loads and initialises NVML. UNAVAILABLE naming the library or the function on failure.
  static Result<std::unique_ptr<Library>> Open(const std::string& path = "libnvidia-ml.so.1");
  ~Library();  // nvmlShutdown, dlclose
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;

  const Functions& fn() const { return fn_; }
  // "NVML_ERROR_NOT_FOUND (6): Not Found" style text for a return code.
  std::string Describe(nvmlReturn_t code) const;
  // `what` failed with `code`: UNAVAILABLE for a lost GPU or a driver problem, NOT_FOUND,
  // FAILED_PRECONDITION for "not supported", INTERNAL otherwise; the message names both.
  Status Error(const std::string& what, nvmlReturn_t code) const;

 private:
  Library(void* handle, Functions fn) : handle_(handle), fn_(fn) {}
  void* handle_;
  Functions fn_;
};

}  // namespace gpuvpa::nvml
