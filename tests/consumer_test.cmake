# Installs the gemmlab build tree into a scratch prefix, then configures, builds and runs the
# project in tests/consumer against it through find_package(gemmlab).
#
#   cmake -DBUILD_DIR=<gemmlab build> -DCONSUMER_SOURCE=<tests/consumer> -DWORK_DIR=<scratch>
#         -DGENERATOR=<generator> -DCXX_COMPILER=<c++> [-DBUILD_TYPE=..] [-DCXX_FLAGS=..]
#         [-DLINKER_FLAGS=..] -P consumer_test.cmake
cmake_minimum_required(VERSION 3.25)

foreach(var BUILD_DIR CONSUMER_SOURCE WORK_DIR GENERATOR CXX_COMPILER)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "consumer_test: ${var} is not set")
  endif()
endforeach()
if(NOT BUILD_TYPE)
  set(BUILD_TYPE Release)
endif()

set(prefix "${WORK_DIR}/install")
set(consumer_build "${WORK_DIR}/build")
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

function(step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " command "${ARGN}")
    message(FATAL_ERROR "consumer_test: ${what} failed (${rc})\n  command: ${command}\n"
                        "--- stdout ---\n${out}\n--- stderr ---\n${err}")
  endif()
  message(STATUS "${what}: ok")
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

step("install" "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${prefix}" --config "${BUILD_TYPE}")
if(NOT EXISTS "${prefix}/lib/cmake/gemmlab/gemmlabConfig.cmake" AND
   NOT EXISTS "${prefix}/lib64/cmake/gemmlab/gemmlabConfig.cmake" AND
   NOT EXISTS "${prefix}/lib/x86_64-linux-gnu/cmake/gemmlab/gemmlabConfig.cmake")
  file(GLOB_RECURSE configs "${prefix}/*gemmlabConfig.cmake")
  if(NOT configs)
    message(FATAL_ERROR "consumer_test: the install tree has no gemmlabConfig.cmake")
  endif()
endif()

step("configure the consumer" "${CMAKE_COMMAND}" -S "${CONSUMER_SOURCE}" -B "${consumer_build}" -G "${GENERATOR}"
     "-DCMAKE_BUILD_TYPE=${BUILD_TYPE}" "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}" "-DCMAKE_PREFIX_PATH=${prefix}"
     "-DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF" "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}"
     "-DCMAKE_EXE_LINKER_FLAGS=${LINKER_FLAGS}")

# The package must come from the install tree, not from the build tree.
file(STRINGS "${consumer_build}/CMakeCache.txt" found_dir REGEX "^gemmlab_DIR:")
string(REGEX REPLACE "^gemmlab_DIR:[A-Z]+=" "" found_dir "${found_dir}")
file(REAL_PATH "${prefix}" real_prefix)
file(REAL_PATH "${found_dir}" real_found)
string(FIND "${real_found}" "${real_prefix}/" at)
if(NOT at EQUAL 0)
  message(FATAL_ERROR "consumer_test: gemmlab was found in '${found_dir}', not in the install prefix '${prefix}'")
endif()

step("build the consumer" "${CMAKE_COMMAND}" --build "${consumer_build}")
step("run the consumer" "${consumer_build}/consumer")
message(STATUS "consumer output: ${step_output}")
