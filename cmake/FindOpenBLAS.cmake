# Finds OpenBLAS (Debian: libopenblas-dev).
# Result: OpenBLAS_FOUND, OpenBLAS_LIBRARY, OpenBLAS_RUNTIME_LIBRARY (the file the dynamic loader
# opens, symlinks resolved), imported target OpenBLAS::OpenBLAS.
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(PC_OpenBLAS QUIET openblas)
endif()
find_library(OpenBLAS_LIBRARY NAMES openblas HINTS ${PC_OpenBLAS_LIBRARY_DIRS})
find_path(OpenBLAS_INCLUDE_DIR NAMES cblas.h HINTS ${PC_OpenBLAS_INCLUDE_DIRS})
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(OpenBLAS REQUIRED_VARS OpenBLAS_LIBRARY OpenBLAS_INCLUDE_DIR
  REASON_FAILURE_MESSAGE "install it with: apt-get install libopenblas-dev")
if(OpenBLAS_FOUND)
  file(REAL_PATH "${OpenBLAS_LIBRARY}" OpenBLAS_RUNTIME_LIBRARY)
  if(NOT TARGET OpenBLAS::OpenBLAS)
    add_library(OpenBLAS::OpenBLAS UNKNOWN IMPORTED)
    set_target_properties(OpenBLAS::OpenBLAS PROPERTIES IMPORTED_LOCATION "${OpenBLAS_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${OpenBLAS_INCLUDE_DIR}")
  endif()
endif()
mark_as_advanced(OpenBLAS_LIBRARY OpenBLAS_INCLUDE_DIR)
