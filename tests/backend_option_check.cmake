# Configures the project in a scratch directory with backend options that must fail:
#  - GEMMLAB_WITH_OPENCL=ON while find_package(OpenCL) is disabled: the error names the Debian packages;
#  - GEMMLAB_WITH_MPI=maybe: the error lists the allowed values.
# Usage: cmake -DSOURCE_DIR=... -DWORK_DIR=... -P backend_option_check.cmake
function(expect_configure_failure name expected)
  set(dir "${WORK_DIR}/${name}")
  file(REMOVE_RECURSE "${dir}")
  execute_process(
    COMMAND ${CMAKE_COMMAND} -S "${SOURCE_DIR}" -B "${dir}" -G Ninja
            -DGEMMLAB_BUILD_TESTS=OFF -DGEMMLAB_BUILD_BENCH=OFF ${ARGN}
    RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(result EQUAL 0)
    message(FATAL_ERROR "${name}: configuring with ${ARGN} succeeded; expected an error mentioning '${expected}'")
  endif()
  string(FIND "${out}${err}" "${expected}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${name}: the configure error does not mention '${expected}'. It said:\n${err}")
  endif()
  message(STATUS "${name}: failed as expected, mentioning '${expected}'")
endfunction()

expect_configure_failure(opencl_on_missing "apt-get install ocl-icd-opencl-dev"
  -DGEMMLAB_WITH_OPENCL=ON -DCMAKE_DISABLE_FIND_PACKAGE_OpenCL=ON)
expect_configure_failure(bad_option_value "allowed values are AUTO, ON, OFF" -DGEMMLAB_WITH_MPI=maybe)
