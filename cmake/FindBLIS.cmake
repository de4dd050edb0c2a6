# Finds BLIS (Debian: libblis-dev; it ships no pkg-config file).
# Result: BLIS_FOUND, BLIS_LIBRARY, BLIS_RUNTIME_LIBRARY (symlinks resolved), imported target
# BLIS::BLIS.
find_library(BLIS_LIBRARY NAMES blis)
find_path(BLIS_INCLUDE_DIR NAMES blis.h PATH_SUFFIXES blis)
include(${CMAKE_CURRENT_LIST_DIR}/BlasLibraryResult.cmake)
gemmlab_blas_library_result(BLIS libblis-dev)
