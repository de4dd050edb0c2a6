# Finds OpenBLAS (Debian: libopenblas-dev).
# Result: OpenBLAS_FOUND, OpenBLAS_LIBRARY, OpenBLAS_RUNTIME_LIBRARY (the file the dynamic loader
# opens, symlinks resolved), imported target OpenBLAS::OpenBLAS.
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(PC_OpenBLAS QUIET openblas)
endif()
find_library(OpenBLAS_LIBRARY NAMES openblas HINTS ${PC_OpenBLAS_LIBRARY_DIRS})
find_path(OpenBLAS_INCLUDE_DIR NAMES cblas.h HINTS ${PC_OpenBLAS_INCLUDE_DIRS})
include(${CMAKE_CURRENT_LIST_DIR}/BlasLibraryResult.cmake)
gemmlab_blas_library_result(OpenBLAS libopenblas-dev)
