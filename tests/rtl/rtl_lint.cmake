# Runs `verilator --lint-only -Wall` on every RTL module (each as the top,
# with its dependencies), for the default and the co-simulation parameters.
# Usage: cmake -DVERILATOR=<verilator> -DRTL_DIR=<hw/rtl> -P rtl_lint.cmake
cmake_minimum_required(VERSION 3.25)
if(NOT VERILATOR OR NOT EXISTS "${VERILATOR}")
  message(FATAL_ERROR "verilator not found (install the verilator package)")
endif()
set(pkgs ${RTL_DIR}/lint.vlt ${RTL_DIR}/panama_regmap_pkg.sv ${RTL_DIR}/panama_wire_pkg.sv)
set(all ${RTL_DIR}/panama_fifo.sv ${RTL_DIR}/panama_divider.sv ${RTL_DIR}/panama_fp32_add.sv
        ${RTL_DIR}/panama_fp32_add16.sv ${RTL_DIR}/panama_engine.sv)
file(GLOB found ${RTL_DIR}/*.sv)
foreach(f ${found})
  if(NOT f IN_LIST all AND NOT f MATCHES "_pkg\\.sv$")
    message(FATAL_ERROR "RTL file ${f} is not in the lint list of tests/rtl/rtl_lint.cmake")
  endif()
endforeach()
set(runs
    "panama_fifo|"
    "panama_divider|"
    "panama_fp32_add|"
    "panama_fp32_add16|"
    "panama_engine|"
    "panama_engine|-GNUM_ENTRIES=8,-GNUM_SLOTS=64,-GSLOT_WORDS=144")
set(failed 0)
foreach(run ${runs})
  string(REPLACE "|" ";" parts "${run}")
  string(REPLACE "," ";" parts "${parts}")
  list(GET parts 0 top)
  list(LENGTH parts n)
  set(params "")
  if(n GREATER 1)
    list(SUBLIST parts 1 -1 params)
  endif()
  execute_process(COMMAND ${VERILATOR} --lint-only -Wall --top-module ${top} ${params} ${pkgs} ${all}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc EQUAL 0 AND "${err}" STREQUAL "")
    message(STATUS "lint clean: ${top} ${params}")
  else()
    message(STATUS "lint FAILED: ${top} ${params}\n${out}${err}")
    set(failed 1)
  endif()
endforeach()
if(failed)
  message(FATAL_ERROR "verilator --lint-only -Wall reported problems")
endif()
