# A fake libnvidia-ml.so.1 (fake_nvml.cc): the NVML functions the node agent resolves, replaying
# the real H200 recordings or a synthetic node, for the tests and the agent's benchmark. In a
# folder of its own, so that only what is pointed at it loads it.
if(NOT TARGET fake_nvml)
  add_library(fake_nvml SHARED ${CMAKE_CURRENT_LIST_DIR}/fake_nvml.cc)
  target_include_directories(fake_nvml PRIVATE ${CMAKE_SOURCE_DIR})
  set_target_properties(fake_nvml PROPERTIES OUTPUT_NAME nvidia-ml SUFFIX ".so.1"
                        LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fake-nvml)
endif()
