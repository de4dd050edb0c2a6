# The AMD targets the HIP kernels are compiled for, checked against the hipcc found:
#   GEMMLAB_HIP_TARGETS (cache; default gfx90a;gfx942;gfx1100: CDNA2, CDNA3, RDNA3)
# gives, after gemmlab_resolve_hip_targets(),
#   GEMMLAB_HIP_TARGETS_RESOLVED  the targets this hipcc compiles (gfx940 stands in for gfx942 on
#                                 hipcc 5.2, whose clang 15 predates gfx942)
#   GEMMLAB_HIP_DEVICE_LIB_PATH   a directory of device libraries when the installed ones lack a
#                                 target's (Debian's ROCm 5.2 bitcode has none for gfx1100: only
#                                 its oclc_isa_version file is missing, a one-constant module this
#                                 build generates beside links to the installed ones); else empty
set(GEMMLAB_HIP_TARGETS "gfx90a;gfx942;gfx1100" CACHE STRING "AMD targets the HIP kernels are compiled for")

# Compiles a one-line kernel for `target`; `result` is empty on success, else hipcc's error.
function(gemmlab_hip_probe target device_libs result)
  set(dir ${CMAKE_BINARY_DIR}/hip-probe)
  file(MAKE_DIRECTORY ${dir})
  file(WRITE ${dir}/probe.hip "#include <hip/hip_runtime.h>\n__global__ void probe(int* p) { p[threadIdx.x] = 1; }\n")
  set(env "")
  if(device_libs)
    set(env ${CMAKE_COMMAND} -E env DEVICE_LIB_PATH=${device_libs})
  endif()
  execute_process(COMMAND ${env} ${GEMMLAB_HIPCC} --offload-arch=${target} --cuda-device-only -S -x hip
                          ${dir}/probe.hip -o ${dir}/probe-${target}.s
                  RESULT_VARIABLE status ERROR_VARIABLE errors OUTPUT_QUIET)
  if(status EQUAL 0)
    set(${result} "" PARENT_SCOPE)
  else()
    string(REGEX MATCH "error: [^\n]*" first_error "${errors}")
    set(${result} "${first_error} " PARENT_SCOPE)
  endif()
endfunction()

# A device-library directory: links to the installed bitcode plus oclc_isa_version_<N>.bc for
# each of `targets` that lacks one (the module defines __oclc_ISA_version = major*1000 +
# minor*100 + stepping, as the installed ones do).
function(gemmlab_hip_device_libs targets result)
  find_path(GEMMLAB_HIP_BITCODE_DIR oclc_isa_version_90a.bc
            PATHS /usr/lib/x86_64-linux-gnu/amdgcn/bitcode /opt/rocm/amdgcn/bitcode /usr/lib/amdgcn/bitcode)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env HIPCC_VERBOSE=1 ${GEMMLAB_HIPCC} --version
                  OUTPUT_VARIABLE verbose ERROR_VARIABLE verbose)
  string(REGEX MATCH "hipcc-cmd: *([^ \n]+)" match "${verbose}")
  set(clang "${CMAKE_MATCH_1}")
  if(NOT GEMMLAB_HIP_BITCODE_DIR OR NOT clang)
    set(${result} "" PARENT_SCOPE)
    return()
  endif()
  set(dir ${CMAKE_BINARY_DIR}/hip-device-libs)
  file(MAKE_DIRECTORY ${dir})
  file(GLOB installed ${GEMMLAB_HIP_BITCODE_DIR}/*.bc)
  foreach(file IN LISTS installed)
    get_filename_component(name ${file} NAME)
    file(CREATE_LINK ${file} ${dir}/${name} SYMBOLIC)
  endforeach()
  foreach(target IN LISTS targets)
    string(REGEX MATCH "^gfx([0-9a-f]+)([0-9a-f])([0-9a-f])$" parts "${target}")
    if(NOT parts OR EXISTS ${dir}/oclc_isa_version_${CMAKE_MATCH_1}${CMAKE_MATCH_2}${CMAKE_MATCH_3}.bc)
      continue()
    endif()
    set(digits ${CMAKE_MATCH_1}${CMAKE_MATCH_2}${CMAKE_MATCH_3})
    math(EXPR version "${CMAKE_MATCH_1} * 1000 + 0x${CMAKE_MATCH_2} * 100 + 0x${CMAKE_MATCH_3}")
    file(WRITE ${dir}/isa_${digits}.ll
         "target triple = \"amdgcn-amd-amdhsa\"\n"
         "@__oclc_ISA_version = linkonce_odr protected local_unnamed_addr addrspace(4) constant i32 ${version}, align 4\n")
    execute_process(COMMAND ${clang} -c -emit-llvm -nogpulib --target=amdgcn-amd-amdhsa ${dir}/isa_${digits}.ll
                            -o ${dir}/oclc_isa_version_${digits}.bc
                    RESULT_VARIABLE status ERROR_QUIET)
    if(NOT status EQUAL 0)
      file(REMOVE ${dir}/oclc_isa_version_${digits}.bc)
    endif()
  endforeach()
  set(${result} ${dir} PARENT_SCOPE)
endfunction()

function(gemmlab_resolve_hip_targets)
  set(resolved "")
  set(device_libs "")
  foreach(target IN LISTS GEMMLAB_HIP_TARGETS)
    gemmlab_hip_probe(${target} "${device_libs}" error)
    if(error MATCHES "cannot find ROCm device library")
      gemmlab_hip_device_libs("${GEMMLAB_HIP_TARGETS}" device_libs)
      gemmlab_hip_probe(${target} "${device_libs}" error)
    endif()
    if(error AND target STREQUAL "gfx942")
      gemmlab_hip_probe(gfx940 "${device_libs}" fallback_error)
      if(NOT fallback_error)
        message(STATUS "gemmlab: this hipcc does not know gfx942 (${error}); compiling for gfx940, the CDNA3 target it has")
        set(target gfx940)
        set(error "")
      endif()
    endif()
    if(error)
      message(WARNING "gemmlab: hipcc cannot compile for ${target} (${error}); leaving it out of GEMMLAB_HIP_TARGETS")
    else()
      list(APPEND resolved ${target})
    endif()
  endforeach()
  if(device_libs)
    message(STATUS "gemmlab: HIP kernels are compiled for ${resolved} (device libraries: ${device_libs})")
  else()
    message(STATUS "gemmlab: HIP kernels are compiled for ${resolved}")
  endif()
  set(GEMMLAB_HIP_TARGETS_RESOLVED "${resolved}" PARENT_SCOPE)
  set(GEMMLAB_HIP_DEVICE_LIB_PATH "${device_libs}" PARENT_SCOPE)
endfunction()
