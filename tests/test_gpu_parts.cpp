// The GPU parts of the datasheet catalogue: the one source of the limits that the GPU backends'
// compile targets are described by. The program embeds data/datasheets/devices.json when it is
// built; these tests read the file itself and check that every part's limits are its entry's,
// with a source for each figure.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "gemmlab/device.hpp"
#include "test_support.hpp"

namespace gemmlab {
namespace {

using testing::expect_catalogue_limits;

nlohmann::json catalogue() {
  std::ifstream in(GEMMLAB_DATASHEETS_FILE);
  return nlohmann::json::parse(in);
}

TEST(GpuParts, EachPartIsItsCatalogueEntryWithASourceForEveryLimit) {
  const nlohmann::json c = catalogue();
  std::size_t parts = 0;
  for (const nlohmann::json& device : c["devices"]) {
    if (!device.contains("limits")) continue;
    ++parts;
    const std::string id = device["id"];
    for (const nlohmann::json& target : device["limits"]["targets"]) {
      const GpuPart& part = gpu_part(target.get<std::string>());
      EXPECT_EQ(part.id, id) << target;
      expect_catalogue_limits(part.limits, device);
    }
    for (const auto& [key, figure] : device["limits"]["values"].items()) {
      ASSERT_TRUE(figure.contains("source")) << id << " " << key;
      EXPECT_TRUE(c["sources"].contains(figure["source"].get<std::string>())) << id << " " << key;
      for (const nlohmann::json& also : figure.value("also", nlohmann::json::array()))
        EXPECT_TRUE(c["sources"].contains(also.get<std::string>())) << id << " " << key;
    }
  }
  EXPECT_EQ(gpu_parts().size(), parts);
}

TEST(GpuParts, EveryCompileTargetHasAPart) {
  // The CUDA architectures gemmlab compiles for or describes, and the AMD targets it knows.
  for (const char* target : {"sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "gfx90a", "gfx940", "gfx942", "gfx1100"})
    EXPECT_NO_THROW(gpu_part(target)) << target;
  EXPECT_EQ(gpu_part("sm_90").id, "nvidia-h100-sxm");
  EXPECT_EQ(gpu_part("sm_90").limits.compute_capability, 90);
  EXPECT_EQ(gpu_part("gfx90a").name, "AMD Instinct MI250X (one die)") << "one GCD is the device software sees";
  EXPECT_EQ(&gpu_part("gfx940"), &gpu_part("gfx942")) << "two names of the CDNA3 target";
  EXPECT_THROW_MENTIONING(gpu_part("gfx803"), std::invalid_argument, {"gfx803", "sm_90", "gfx1100"});
}

}  // namespace
}  // namespace gemmlab
