# Backend switches: each GEMMLAB_WITH_<X> is AUTO, ON or OFF.
#   AUTO - the backend is built when its dependency is found;
#   ON   - the dependency is required: configuring fails with the Debian package(s) to install;
#   OFF  - never built.
# The result of the detection is GEMMLAB_HAVE_<X> (ON/OFF).

function(gemmlab_backend_option name what debian_packages)
  set(GEMMLAB_WITH_${name} AUTO CACHE STRING "Build the ${name} backend: AUTO, ON or OFF")
  set_property(CACHE GEMMLAB_WITH_${name} PROPERTY STRINGS AUTO ON OFF)
  string(TOUPPER "${GEMMLAB_WITH_${name}}" value)
  if(NOT value MATCHES "^(AUTO|ON|OFF)$")
    message(FATAL_ERROR "GEMMLAB_WITH_${name}=${GEMMLAB_WITH_${name}}: allowed values are AUTO, ON, OFF")
  endif()
  set(GEMMLAB_WITH_${name}_VALUE ${value} PARENT_SCOPE)
  set(GEMMLAB_${name}_NEEDS "${what}" PARENT_SCOPE)
  set(GEMMLAB_${name}_PACKAGES "${debian_packages}" PARENT_SCOPE)
endfunction()

# Turns "found or not" into GEMMLAB_HAVE_<name>, honouring AUTO/ON/OFF.
function(gemmlab_resolve_backend name found)
  set(value ${GEMMLAB_WITH_${name}_VALUE})
  if(value STREQUAL "OFF")
    set(have OFF)
  elseif(found)
    set(have ON)
  elseif(value STREQUAL "ON")
    message(FATAL_ERROR "GEMMLAB_WITH_${name}=ON but ${GEMMLAB_${name}_NEEDS} was not found. "
                        "Install it with: apt-get install ${GEMMLAB_${name}_PACKAGES}")
  else()
    set(have OFF)
  endif()
  set(GEMMLAB_HAVE_${name} ${have} PARENT_SCOPE)
endfunction()

macro(gemmlab_detect_backend name package)
  if(NOT GEMMLAB_WITH_${name}_VALUE STREQUAL "OFF")
    find_package(${package} QUIET)
  endif()
  gemmlab_resolve_backend(${name} "${${package}_FOUND}")
endmacro()

# OpenCL (the ICD loader and headers) and CLBlast, the backend's reference: its C header at build
# time, its library opened at run time (GEMMLAB_CLBLAST_LIBRARY, GEMMLAB_CLBLAST_VERSION).
macro(gemmlab_detect_opencl)
  set(gemmlab_opencl_found FALSE)
  if(NOT GEMMLAB_WITH_OPENCL_VALUE STREQUAL "OFF")
    find_package(OpenCL QUIET)
    find_path(GEMMLAB_CLBLAST_INCLUDE clblast_c.h)
    find_library(GEMMLAB_CLBLAST_LIBRARY_FILE NAMES clblast)
    if(OpenCL_FOUND AND GEMMLAB_CLBLAST_INCLUDE AND GEMMLAB_CLBLAST_LIBRARY_FILE)
      set(gemmlab_opencl_found TRUE)
      get_filename_component(GEMMLAB_CLBLAST_LIBRARY "${GEMMLAB_CLBLAST_LIBRARY_FILE}" REALPATH)
      string(REGEX MATCH "[0-9]+\\.[0-9]+\\.[0-9]+$" GEMMLAB_CLBLAST_VERSION "${GEMMLAB_CLBLAST_LIBRARY}")
    endif()
  endif()
  gemmlab_resolve_backend(OPENCL ${gemmlab_opencl_found})
endmacro()

function(gemmlab_detect_hip)
  set(found FALSE)
  if(NOT GEMMLAB_WITH_HIP_VALUE STREQUAL "OFF")
    find_program(GEMMLAB_HIPCC hipcc)
    find_path(GEMMLAB_HIP_INCLUDE hip/hip_runtime.h PATHS /opt/rocm/include)
    if(GEMMLAB_HIPCC AND GEMMLAB_HIP_INCLUDE)
      set(found TRUE)
    endif()
  endif()
  gemmlab_resolve_backend(HIP ${found})
  set(GEMMLAB_HAVE_HIP ${GEMMLAB_HAVE_HIP} PARENT_SCOPE)
endfunction()

# Debian's Kokkos CMake package imports an include path that does not exist, so detection uses
# the headers in /usr/include/trilinos and the libtrilinos_kokkoscore library directly.
function(gemmlab_detect_kokkos)
  set(found FALSE)
  if(NOT GEMMLAB_WITH_KOKKOS_VALUE STREQUAL "OFF")
    find_path(GEMMLAB_KOKKOS_INCLUDE Kokkos_Core.hpp PATH_SUFFIXES trilinos)
    find_library(GEMMLAB_KOKKOS_CORE NAMES trilinos_kokkoscore kokkoscore)
    if(GEMMLAB_KOKKOS_INCLUDE AND GEMMLAB_KOKKOS_CORE)
      set(found TRUE)
    endif()
  endif()
  gemmlab_resolve_backend(KOKKOS ${found})
  set(GEMMLAB_HAVE_KOKKOS ${GEMMLAB_HAVE_KOKKOS} PARENT_SCOPE)
endfunction()
