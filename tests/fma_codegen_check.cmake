# Checks that the FMA-throughput loops of the runtime (runtime/src/cpu/ceilings.cpp) keep their
# 24 independent accumulators in zmm registers: the hot loop of gemmlab_fma_loop_avx512_fp32
# (and _fp64) must hold at least 24 vfmadd...ps (pd) instructions on zmm registers writing at
# least 24 different destination registers. Fewer means the compiler merged or spilled chains
# and the measured FMA ceiling would be latency-bound instead of throughput-bound.
#
#   cmake -DLIB=<libgemmlab_runtime.a> [-DOBJDUMP=<objdump>] [-DCONFIG=<build type>] -P fma_codegen_check.cmake
#
# Prints "SKIPPED: ..." (the test's SKIP_REGULAR_EXPRESSION) when objdump is missing or the build
# is not optimised (at -O0 every intrinsic goes through memory by design).
cmake_minimum_required(VERSION 3.25)

set(required_fmas 24)
if(NOT DEFINED LIB OR NOT EXISTS "${LIB}")
  message(FATAL_ERROR "fma_codegen_check: LIB='${LIB}' is not an existing library")
endif()
if(NOT OBJDUMP)
  find_program(OBJDUMP NAMES objdump)
endif()
if(NOT OBJDUMP)
  message(STATUS "SKIPPED: objdump not found (install binutils); FMA code generation not checked")
  return()
endif()
if(CONFIG STREQUAL "Debug")
  message(STATUS "SKIPPED: ${CONFIG} build (unoptimised): accumulators live in memory at -O0 by design")
  return()
endif()

execute_process(COMMAND "${OBJDUMP}" -d --no-show-raw-insn "${LIB}"
                OUTPUT_VARIABLE disassembly ERROR_VARIABLE objdump_errors RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "fma_codegen_check: ${OBJDUMP} -d ${LIB} failed (${rc}): ${objdump_errors}")
endif()

# Returns in out_var the disassembly lines of `function`, as a CMake list.
function(function_lines disassembly function out_var)
  string(FIND "${disassembly}" "<${function}>:\n" start)
  if(start EQUAL -1)
    message(FATAL_ERROR "fma_codegen_check: function ${function} not found in ${LIB}")
  endif()
  string(SUBSTRING "${disassembly}" ${start} -1 rest)
  string(FIND "${rest}" "\n\n" end)
  if(NOT end EQUAL -1)
    string(SUBSTRING "${rest}" 0 ${end} rest)
  endif()
  string(REPLACE ";" "," rest "${rest}")
  string(REPLACE "\n" ";" lines "${rest}")
  set(${out_var} "${lines}" PARENT_SCOPE)
endfunction()

# Checks one function; `suffix` is ps or pd.
function(check_fma_loop function suffix)
  function_lines("${disassembly}" ${function} lines)
  # Pass 1: addresses, mnemonics and operands; backward jumps delimit loops.
  set(loops "")
  foreach(line IN LISTS lines)
    if(line MATCHES "^ *([0-9a-f]+):[ \t]+(j[a-z]+)[ \t]+([0-9a-f]+) <")
      math(EXPR from "0x${CMAKE_MATCH_1}" OUTPUT_FORMAT DECIMAL)
      math(EXPR to "0x${CMAKE_MATCH_3}" OUTPUT_FORMAT DECIMAL)
      if(to LESS_EQUAL from)
        list(APPEND loops "${to}:${from}")
      endif()
    endif()
  endforeach()
  if(NOT loops)
    message(FATAL_ERROR "fma_codegen_check: ${function} has no loop (no backward jump):\n${lines}")
  endif()
  # Pass 2: per loop, the FMAs on zmm registers and their destination registers.
  set(best_count 0)
  set(best_destinations 0)
  foreach(loop IN LISTS loops)
    string(REPLACE ":" ";" bounds "${loop}")
    list(GET bounds 0 first)
    list(GET bounds 1 last)
    set(count 0)
    set(destinations "")
    foreach(line IN LISTS lines)
      if(line MATCHES "^ *([0-9a-f]+):[ \t]+vfmadd[0-9]+${suffix}[ \t]+(.*)$")
        set(operands "${CMAKE_MATCH_2}")
        math(EXPR at "0x${CMAKE_MATCH_1}" OUTPUT_FORMAT DECIMAL)
        if(at GREATER_EQUAL first AND at LESS_EQUAL last AND operands MATCHES "%zmm([0-9]+)[ \t]*$")
          math(EXPR count "${count} + 1")
          list(APPEND destinations "${CMAKE_MATCH_1}")
        endif()
      endif()
    endforeach()
    list(REMOVE_DUPLICATES destinations)
    list(LENGTH destinations distinct)
    if(count GREATER best_count)
      set(best_count ${count})
      set(best_destinations ${distinct})
    endif()
  endforeach()
  if(best_count LESS required_fmas OR best_destinations LESS required_fmas)
    string(REPLACE ";" "\n" listing "${lines}")
    message(FATAL_ERROR
      "fma_codegen_check: the loop of ${function} has ${best_count} vfmadd*${suffix} on zmm registers "
      "writing ${best_destinations} distinct registers; expected at least ${required_fmas} of each "
      "(${required_fmas} independent accumulators).\n${listing}")
  endif()
  message(STATUS "${function}: ${best_count} vfmadd*${suffix} zmm in its loop, ${best_destinations} distinct accumulators")
endfunction()

check_fma_loop(gemmlab_fma_loop_avx512_fp32 ps)
check_fma_loop(gemmlab_fma_loop_avx512_fp64 pd)
