# Compiles the CUDA curriculum's SIMT kernels (01..07) as HIP device code for each AMD target, at
# each kernel's default configuration (from `gemmlab kernels --backend cuda --json`), through
# kernels/hip/hip_portability.hpp: one source for both vendors. A kernel that does not compile, or
# uses scratch memory (private segment > 0), fails; the VGPR, SGPR and LDS use of each is printed.
# Then the AMD-only matrix-core kernel (kernels/hip/09_mfma.hip) must contain v_mfma instructions.
#   cmake -DGEMMLAB=... -DHIPCC=... -DTARGETS=gfx90a;gfx940 -DSOURCE_DIR=... -DWORK_DIR=...
#         -P hip_compile_check.cmake
if(NOT HIPCC)
  message("SKIPPED: hipcc not found (Debian: apt-get install hipcc libamdhip64-dev)")
  return()
endif()
execute_process(COMMAND ${GEMMLAB} kernels --backend cuda --json OUTPUT_VARIABLE listing RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message("SKIPPED: this build has no cuda backend, whose kernel specifications give the configurations")
  return()
endif()
file(MAKE_DIRECTORY ${WORK_DIR})
string(JSON count LENGTH "${listing}" kernels)
math(EXPR last "${count} - 1")
set(checked 0)
foreach(i RANGE ${last})
  string(JSON name GET "${listing}" kernels ${i} name)
  if(NOT name MATCHES "^0[1-7]_")  # 08 needs cp.async; 09.. are NVIDIA tensor-core kernels
    continue()
  endif()
  string(JSON precision GET "${listing}" kernels ${i} space_precision)
  set(type float)
  if(precision STREQUAL "fp64")
    set(type double)
  endif()
  set(defines -DTA=${type} -DTC=${type})
  string(JSON params LENGTH "${listing}" kernels ${i} default_config)
  math(EXPR last_param "${params} - 1")
  foreach(p RANGE ${last_param})
    string(JSON key MEMBER "${listing}" kernels ${i} default_config ${p})
    string(JSON value GET "${listing}" kernels ${i} default_config ${key})
    list(APPEND defines -D${key}=${value})
  endforeach()
  foreach(target IN LISTS TARGETS)
    set(out ${WORK_DIR}/${name}-${target}.s)
    execute_process(COMMAND ${HIPCC} --offload-arch=${target} --cuda-device-only -O3 -S -x hip
                            -include ${SOURCE_DIR}/kernels/hip/hip_portability.hpp ${defines}
                            ${SOURCE_DIR}/kernels/cuda/${name}.cu -o ${out}
                    RESULT_VARIABLE compiled ERROR_VARIABLE errors)
    if(NOT compiled EQUAL 0)
      message(FATAL_ERROR "${name} does not compile as HIP for ${target} (${defines}):\n${errors}")
    endif()
    file(READ ${out} isa)
    foreach(field vgpr_count sgpr_count group_segment_fixed_size private_segment_fixed_size)
      string(REGEX MATCH "\\.${field}: +([0-9]+)" match "${isa}")
      set(${field} "${CMAKE_MATCH_1}")
    endforeach()
    message("${name} ${target}: ${vgpr_count} VGPRs, ${sgpr_count} SGPRs, ${group_segment_fixed_size} bytes LDS, "
            "${private_segment_fixed_size} bytes scratch")
    if(private_segment_fixed_size STREQUAL "" OR NOT private_segment_fixed_size EQUAL 0)
      message(FATAL_ERROR "${name} for ${target} uses scratch memory (${private_segment_fixed_size} bytes) or its "
                          "ISA has no resource report")
    endif()
    math(EXPR checked "${checked} + 1")
  endforeach()
endforeach()
if(checked EQUAL 0)
  message(FATAL_ERROR "no SIMT kernel was checked")
endif()

# The matrix-core kernel for CDNA: it must compile to v_mfma instructions, without scratch.
foreach(target IN LISTS TARGETS)
  set(out ${WORK_DIR}/09_mfma-${target}.s)
  execute_process(COMMAND ${HIPCC} --offload-arch=${target} --cuda-device-only -O3 -S -x hip
                          -I${SOURCE_DIR}/kernels/hip -DWAVES_M=2 -DWAVES_N=2 -DBLOCKS_M=2 -DBLOCKS_N=2
                          ${SOURCE_DIR}/kernels/hip/09_mfma.hip -o ${out}
                  RESULT_VARIABLE compiled ERROR_VARIABLE errors)
  if(NOT compiled EQUAL 0)
    message(FATAL_ERROR "09_mfma does not compile for ${target}:\n${errors}")
  endif()
  file(READ ${out} isa)
  string(REGEX MATCHALL "v_mfma_f32_32x32x8_?f16" mfma "${isa}")
  list(LENGTH mfma instructions)
  foreach(field vgpr_count agpr_count sgpr_count group_segment_fixed_size private_segment_fixed_size)
    string(REGEX MATCH "\\.${field}: +([0-9]+)" match "${isa}")
    set(${field} "${CMAKE_MATCH_1}")
  endforeach()
  message("09_mfma ${target}: ${instructions} v_mfma_f32_32x32x8f16, ${vgpr_count} VGPRs, ${agpr_count} AGPRs, "
          "${sgpr_count} SGPRs, ${private_segment_fixed_size} bytes scratch")
  if(instructions EQUAL 0)
    message(FATAL_ERROR "09_mfma for ${target} contains no v_mfma instruction")
  endif()
  if(private_segment_fixed_size STREQUAL "" OR NOT private_segment_fixed_size EQUAL 0)
    message(FATAL_ERROR "09_mfma for ${target} uses scratch memory (${private_segment_fixed_size} bytes)")
  endif()
endforeach()
message("${checked} kernel/target pairs compiled as HIP without scratch")
