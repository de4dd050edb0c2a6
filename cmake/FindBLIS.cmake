# Finds BLIS (Debian: libblis-dev; it ships no pkg-config file).
# Result: BLIS_FOUND, BLIS_LIBRARY, BLIS_RUNTIME_LIBRARY (symlinks resolved), imported target
# BLIS::BLIS.
find_library(BLIS_LIBRARY NAMES blis)
find_path(BLIS_INCLUDE_DIR NAMES blis.h PATH_SUFFIXES blis)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(BLIS REQUIRED_VARS BLIS_LIBRARY BLIS_INCLUDE_DIR
  REASON_FAILURE_MESSAGE "install it with: apt-get install libblis-dev")
if(BLIS_FOUND)
  file(REAL_PATH "${BLIS_LIBRARY}" BLIS_RUNTIME_LIBRARY)
  if(NOT TARGET BLIS::BLIS)
    add_library(BLIS::BLIS UNKNOWN IMPORTED)
    set_target_properties(BLIS::BLIS PROPERTIES IMPORTED_LOCATION "${BLIS_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${BLIS_INCLUDE_DIR}")
  endif()
endif()
mark_as_advanced(BLIS_LIBRARY BLIS_INCLUDE_DIR)
