// Device layer: device listing and selection by spec, checked calls, program cache (memory and
// disk hits, keys, build failures with the log), kernel source lookup.
// ctest-label: gpu
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>

#include "core/device/cl_error.hpp"
#include "core/device/device.hpp"
#include "core/device/kernel_sources.hpp"
#include "core/device/launch.hpp"
#include "tests/support/test_device.hpp"

namespace rtf {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("rtfmri_" + name + "_" + std::to_string(std::random_device{}()));
  fs::remove_all(dir);
  return dir;
}

TEST(DeviceList, ListsAtLeastOneDeviceWithSaneProperties) {
  const auto devices = list_devices();
  ASSERT_FALSE(devices.empty()) << "no OpenCL device: install pocl-opencl-icd (scripts/setup.sh does)";
  for (const auto& d : devices) {
    EXPECT_FALSE(d.device_name.empty());
    EXPECT_GT(d.global_mem_bytes, 0u);
    EXPECT_GT(d.compute_units, 0u);
    EXPECT_GT(d.max_work_group_size, 0u);
    EXPECT_FALSE(d.driver_version.empty());
  }
}

TEST(DeviceSelect, SpecsResolveOrFailClearly) {
  const auto devices = list_devices();
  ASSERT_FALSE(devices.empty());
  const auto first = select_device(fmt::format("{}:{}", devices[0].platform_index, devices[0].device_index));
  EXPECT_EQ(first.device, devices[0].device);
  const auto automatic = select_device("");
  const bool any_gpu = std::any_of(devices.begin(), devices.end(), [](const auto& d) { return d.is_gpu(); });
  EXPECT_EQ(automatic.is_gpu(), any_gpu) << "auto must prefer a GPU when there is one";
  try {
    select_device("99:0");
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("99:0"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("available devices"), std::string::npos) << e.what();
  }
  EXPECT_THROW(select_device("fastest"), std::runtime_error);
  EXPECT_THROW(select_device("1:x"), std::runtime_error);
}

TEST(ClError, CarriesCallNameFileAndLine) {
  EXPECT_STREQ(cl_error_name(CL_OUT_OF_RESOURCES), "CL_OUT_OF_RESOURCES");
  EXPECT_STREQ(cl_error_name(CL_INVALID_KERNEL_NAME), "CL_INVALID_KERNEL_NAME");
  try {
    RTF_CL_CHECK(clFinish(nullptr));
    FAIL() << "clFinish(nullptr) must fail";
  } catch (const ClError& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.code(), CL_INVALID_COMMAND_QUEUE);
    EXPECT_NE(what.find("clFinish(nullptr)"), std::string::npos) << what;
    EXPECT_NE(what.find("CL_INVALID_COMMAND_QUEUE"), std::string::npos) << what;
    EXPECT_NE(what.find("test_device_layer.cpp"), std::string::npos) << what;
  }
}

TEST(ProgramCache, MemoryThenDiskHitsAndDistinctKeys) {
  Device& dev = test::test_device();
  const fs::path dir = fresh_dir("cache");
  const std::string source = kernel_source("threshold.cl");
  {
    ProgramCache cache(dev.context(), dev.info(), dir);
    cache.get("threshold.cl", source, "-cl-std=CL1.2");
    cache.get("threshold.cl", source, "-cl-std=CL1.2");
    EXPECT_EQ(cache.stats().compiles, 1);
    EXPECT_EQ(cache.stats().memory_hits, 1);
    cache.get("threshold.cl", source, "-cl-std=CL1.2 -DUNUSED=1");  // other options: other key
    EXPECT_EQ(cache.stats().compiles, 2);
    EXPECT_NE(cache.key(source, "a"), cache.key(source, "b"));
    EXPECT_NE(cache.key(source, "a"), cache.key(source + " ", "a"));
  }
  size_t files = 0;
  for (const auto& entry : fs::directory_iterator(dir)) files += entry.path().extension() == ".bin";
  EXPECT_EQ(files, 2u);
  {
    ProgramCache cache(dev.context(), dev.info(), dir);
    cl_program program = cache.get("threshold.cl", source, "-cl-std=CL1.2");
    EXPECT_EQ(cache.stats().disk_hits, 1);
    EXPECT_EQ(cache.stats().compiles, 0);
    ClKernel kernel(RTF_CL_CREATE(clCreateKernel(program, "threshold_above", &rtf_cl_err)));
    EXPECT_TRUE(kernel);
  }
  // A corrupt cache file is replaced by a fresh compile, not fatal.
  for (const auto& entry : fs::directory_iterator(dir)) {
    std::ofstream(entry.path(), std::ios::trunc) << "garbage";
  }
  {
    ProgramCache cache(dev.context(), dev.info(), dir);
    cache.get("threshold.cl", source, "-cl-std=CL1.2");
    EXPECT_EQ(cache.stats().compiles, 1);
  }
  fs::remove_all(dir);
}

TEST(ProgramCache, BuildFailureThrowsWithLog) {
  Device& dev = test::test_device();
  ProgramCache cache(dev.context(), dev.info(), std::nullopt);
  try {
    cache.get("broken.cl", "__kernel void k(__global float* a) { a[0] = undeclared_thing; }", "");
    FAIL() << "expected a build error";
  } catch (const ClBuildError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("broken.cl"), std::string::npos) << what;
    EXPECT_NE(what.find("undeclared_thing"), std::string::npos) << "build log missing: " << what;
  }
}

TEST(KernelSources, EmbeddedAndIncludesExpanded) {
  const auto names = embedded_kernel_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "smooth_separable.cl"), names.end());
  EXPECT_NE(kernel_source("smooth_separable.cl").find("__kernel void smooth_axis"), std::string::npos);
  EXPECT_THROW(kernel_source("no_such_kernel.cl"), std::runtime_error);
}

TEST(Launch, KernelRunsAndBoundsChecksRoundedGlobalSize) {
  Device& dev = test::test_device();
  ClKernel kernel = dev.kernel("threshold.cl", "threshold_above");
  const int n = 1001;  // not a multiple of the local size: extra work-items must not write
  std::vector<float> values(n);
  for (int i = 0; i < n; ++i) values[static_cast<size_t>(i)] = static_cast<float>(i % 10);
  DeviceBuffer<float> in(dev, static_cast<size_t>(n));
  DeviceBuffer<uint8_t> out(dev, static_cast<size_t>(n) + 64);
  in.write(dev.queue(), values);
  out.fill(dev.queue(), uint8_t{7});
  const float threshold = 4.5f;
  set_args(kernel, in, out, threshold, n);
  ClEvent event = launch<1>(dev.queue(), kernel, {static_cast<size_t>(n)}, {64});
  EXPECT_GE(event_milliseconds(event), 0.0);
  const auto result = out.read_all(dev.queue());
  for (int i = 0; i < n; ++i) ASSERT_EQ(result[static_cast<size_t>(i)], (i % 10) > 4.5 ? 1 : 0);
  for (size_t i = static_cast<size_t>(n); i < result.size(); ++i) ASSERT_EQ(result[i], 7) << "overrun at " << i;
}

TEST(DeviceBuffer, RangeChecks) {
  Device& dev = test::test_device();
  DeviceBuffer<float> buf(dev, 10);
  std::vector<float> too_many(11);
  EXPECT_THROW(buf.write(dev.queue(), too_many), std::out_of_range);
  EXPECT_THROW(DeviceBuffer<float>(dev, 0), std::invalid_argument);
}

}  // namespace
}  // namespace rtf
