// NVML through dlopen: see nvml_library.h.
#include "recommender/agent/nvml_library.h"

#include <dlfcn.h>

namespace gpuvpa::nvml {
namespace {

const char* CodeName(nvmlReturn_t code) {
  switch (code) {
    case kSuccess:
      return "NVML_SUCCESS";
    case kUninitialized:
      return "NVML_ERROR_UNINITIALIZED";
    case kInvalidArgument:
      return "NVML_ERROR_INVALID_ARGUMENT";
    case kNotSupported:
      return "NVML_ERROR_NOT_SUPPORTED";
    case kNoPermission:
      return "NVML_ERROR_NO_PERMISSION";
    case kNotFound:
      return "NVML_ERROR_NOT_FOUND";
    case kInsufficientSize:
      return "NVML_ERROR_INSUFFICIENT_SIZE";
    case kDriverNotLoaded:
      return "NVML_ERROR_DRIVER_NOT_LOADED";
    case kGpuIsLost:
      return "NVML_ERROR_GPU_IS_LOST";
    default:
      return "NVML error";
  }
}

template <typename F>
bool Resolve(void* handle, const char* name, F& out) {
  out = reinterpret_cast<F>(dlsym(handle, name));
  return out != nullptr;
}

}  // namespace

Result<std::unique_ptr<Library>> Library::Open(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return UnavailableError("NVML: cannot load " + path + ": " + (why ? why : "unknown error") +
                            " (no NVIDIA driver on this node, or the container lacks the NVIDIA "
                            "runtime's libraries: runtimeClassName nvidia, "
                            "NVIDIA_VISIBLE_DEVICES=all)");
  }
  Functions fn;
  struct Required {
    const char* name;
    bool ok;
  };
  const Required required[] = {
      {"nvmlInit_v2", Resolve(handle, "nvmlInit_v2", fn.Init)},
      {"nvmlShutdown", Resolve(handle, "nvmlShutdown", fn.Shutdown)},
      {"nvmlErrorString", Resolve(handle, "nvmlErrorString", fn.ErrorString)},
      {"nvmlDeviceGetCount_v2", Resolve(handle, "nvmlDeviceGetCount_v2", fn.DeviceGetCount)},
      {"nvmlDeviceGetHandleByIndex_v2",
       Resolve(handle, "nvmlDeviceGetHandleByIndex_v2", fn.DeviceGetHandleByIndex)},
      {"nvmlDeviceGetUUID", Resolve(handle, "nvmlDeviceGetUUID", fn.DeviceGetUUID)},
      {"nvmlDeviceGetMemoryInfo",
       Resolve(handle, "nvmlDeviceGetMemoryInfo", fn.DeviceGetMemoryInfo)},
      {"nvmlDeviceGetUtilizationRates",
       Resolve(handle, "nvmlDeviceGetUtilizationRates", fn.DeviceGetUtilizationRates)},
      {"nvmlDeviceGetComputeRunningProcesses_v3",
       Resolve(handle, "nvmlDeviceGetComputeRunningProcesses_v3",
               fn.DeviceGetComputeRunningProcesses)},
      {"nvmlDeviceGetProcessUtilization",
       Resolve(handle, "nvmlDeviceGetProcessUtilization", fn.DeviceGetProcessUtilization)},
  };
  for (const Required& r : required) {
    if (!r.ok) {
      dlclose(handle);
      return UnavailableError("NVML: " + path + " has no function " + r.name +
                              " (driver too old for this agent)");
    }
  }
  Resolve(handle, "nvmlDeviceGetName", fn.DeviceGetName);
  Resolve(handle, "nvmlSystemGetProcessName", fn.SystemGetProcessName);
  Resolve(handle, "nvmlGpmQueryDeviceSupport", fn.GpmQueryDeviceSupport);
  Resolve(handle, "nvmlGpmSampleAlloc", fn.GpmSampleAlloc);
  Resolve(handle, "nvmlGpmSampleFree", fn.GpmSampleFree);
  Resolve(handle, "nvmlGpmSampleGet", fn.GpmSampleGet);
  Resolve(handle, "nvmlGpmMetricsGet", fn.GpmMetricsGet);
  if (!fn.GpmSampleAlloc || !fn.GpmSampleFree || !fn.GpmSampleGet || !fn.GpmMetricsGet)
    fn.GpmQueryDeviceSupport = nullptr;  // GPM needs all of them
  Resolve(handle, "nvmlDeviceGetMigMode", fn.DeviceGetMigMode);
  Resolve(handle, "nvmlDeviceGetMaxMigDeviceCount", fn.DeviceGetMaxMigDeviceCount);
  Resolve(handle, "nvmlDeviceGetMigDeviceHandleByIndex", fn.DeviceGetMigDeviceHandleByIndex);
  Resolve(handle, "nvmlDeviceGetGpuInstanceId", fn.DeviceGetGpuInstanceId);
  Resolve(handle, "nvmlGpmMigSampleGet", fn.GpmMigSampleGet);
  if (!fn.DeviceGetMaxMigDeviceCount || !fn.DeviceGetMigDeviceHandleByIndex ||
      !fn.DeviceGetGpuInstanceId)
    fn.DeviceGetMigMode = nullptr;  // MIG instances need all of them
  std::unique_ptr<Library> library(new Library(handle, fn));
  if (const nvmlReturn_t rc = fn.Init(); rc != kSuccess) {
    Status s = library->Error("nvmlInit_v2", rc);
    library->fn_.Shutdown = nullptr;  // never initialised
    return UnavailableError(s.message());
  }
  return library;
}

Library::~Library() {
  if (fn_.Shutdown) fn_.Shutdown();
  dlclose(handle_);
}

std::string Library::Describe(nvmlReturn_t code) const {
  const char* text = fn_.ErrorString ? fn_.ErrorString(code) : nullptr;
  return std::string(CodeName(code)) + " (" + std::to_string(code) + ")" +
         (text ? std::string(": ") + text : std::string());
}

Status Library::Error(const std::string& what, nvmlReturn_t code) const {
  std::string message = "NVML: " + what + ": " + Describe(code);
  switch (code) {
    case kGpuIsLost:
    case kDriverNotLoaded:
    case kUninitialized:
      return UnavailableError(std::move(message));
    case kNotFound:
      return NotFoundError(std::move(message));
    case kNotSupported:
      return FailedPreconditionError(std::move(message));
    default:
      return InternalError(std::move(message));
  }
}

}  // namespace gpuvpa::nvml
