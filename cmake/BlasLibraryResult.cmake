# What FindOpenBLAS and FindBLIS do once they have looked for <name>_LIBRARY and
# <name>_INCLUDE_DIR: report the result (naming the Debian package to install when it failed),
# record the file the dynamic loader opens (<name>_RUNTIME_LIBRARY, symlinks resolved: the
# references are opened with dlopen) and define the imported target <name>::<name>.
# A macro, so that its results land in the caller's (the find module's) scope.
macro(gemmlab_blas_library_result name debian_package)
  include(FindPackageHandleStandardArgs)
  find_package_handle_standard_args(${name} REQUIRED_VARS ${name}_LIBRARY ${name}_INCLUDE_DIR
    REASON_FAILURE_MESSAGE "install it with: apt-get install ${debian_package}")
  if(${name}_FOUND)
    file(REAL_PATH "${${name}_LIBRARY}" ${name}_RUNTIME_LIBRARY)
    if(NOT TARGET ${name}::${name})
      add_library(${name}::${name} UNKNOWN IMPORTED)
      set_target_properties(${name}::${name} PROPERTIES IMPORTED_LOCATION "${${name}_LIBRARY}"
        INTERFACE_INCLUDE_DIRECTORIES "${${name}_INCLUDE_DIR}")
    endif()
  endif()
  mark_as_advanced(${name}_LIBRARY ${name}_INCLUDE_DIR)
endmacro()
