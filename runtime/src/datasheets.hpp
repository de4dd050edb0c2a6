// The datasheet catalogue, data/datasheets/devices.json, as the build embedded it
// (cmake/embed_file.cmake): the source of the GPU parts' limits (gpu_part, device.hpp).
#pragma once

#include <string_view>

namespace gemmlab {

std::string_view embedded_datasheets();

}  // namespace gemmlab
