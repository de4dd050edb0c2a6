// Every kernel's search space has the size it had before its constraints were rewritten: the raw
// (Cartesian) and valid sizes of each kernel, precision and device are compared with
// tests/data/space_sizes.json, recorded by this test from the code as it stood before
// (GEMMLAB_WRITE_SPACE_SIZES=FILE writes the file instead of comparing). A kernel's space depends
// on its device, so only the devices present both then and now are compared: the datasheet targets
// of the GPU backends always are, the CPU and OpenCL devices where this is the recording machine.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "gemmlab/builtin.hpp"

namespace gemmlab {
namespace {

struct Sizes {
  double raw = 0;
  std::size_t valid = 0;
};

// "backend/kernel/precision @ device fingerprint" -> sizes, for every device the backend has here
// and every compile target.
std::map<std::string, Sizes> current_sizes(std::set<std::string>& devices) {
  std::map<std::string, Sizes> sizes;
  for (const Kernel* k : registry().kernels()) {
    std::vector<DeviceInfo> infos = registry().backend(std::string(k->backend())).devices();
    for (const CompileTarget& target : k->compile_targets()) infos.push_back(target.device);
    for (const DeviceInfo& info : infos) {
      const std::string device = fingerprint(info);
      devices.insert(device);
      for (Precision p : k->precisions()) {
        const SearchSpace s = k->space(info, p);
        sizes[std::string(k->backend()) + "/" + std::string(k->name()) + "/" + std::string(to_string(p)) + " @ " +
              device] = {s.raw_size(), s.valid_size()};
      }
    }
  }
  return sizes;
}

TEST(SpaceSizes, EveryKernelSpaceKeepsItsRecordedSize) {
  std::set<std::string> devices;
  const std::map<std::string, Sizes> now = current_sizes(devices);
  if (const char* out = std::getenv("GEMMLAB_WRITE_SPACE_SIZES")) {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& [key, s] : now) j[key] = {{"raw_size", s.raw}, {"valid_size", s.valid}};
    std::ofstream(out) << j.dump(1) << "\n";
    GTEST_SKIP() << "wrote " << now.size() << " space sizes to " << out;
  }
  std::ifstream in(GEMMLAB_TEST_DATA "/space_sizes.json");
  ASSERT_TRUE(in) << "cannot read " GEMMLAB_TEST_DATA "/space_sizes.json";
  const nlohmann::json recorded = nlohmann::json::parse(in);
  std::size_t compared = 0;
  for (const auto& [key, value] : recorded.items()) {
    const std::string device = key.substr(key.find(" @ ") + 3);
    if (!devices.count(device)) continue;  // a device this machine does not have
    ++compared;
    const auto found = now.find(key);
    ASSERT_NE(found, now.end()) << key << ": recorded, but no such kernel, precision and device now";
    EXPECT_EQ(found->second.raw, value["raw_size"].get<double>()) << key << ": raw size";
    EXPECT_EQ(found->second.valid, value["valid_size"].get<std::size_t>()) << key << ": valid size";
  }
  // The datasheet targets of the GPU backends are the same on every machine.
  EXPECT_GT(compared, 0u) << "no recorded device is present here";
  std::cout << "compared " << compared << " of " << recorded.size() << " recorded space sizes\n";
}

}  // namespace
}  // namespace gemmlab
