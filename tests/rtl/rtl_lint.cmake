# Runs `verilator --lint-only -Wall` on every RTL module (each as the top,
# with its dependencies), for the default and the co-simulation parameters.
# Usage: cmake -DVERILATOR=<verilator> -DRTL_DIR=<hw/rtl> -P rtl_lint.cmake
cmake_minimum_required(VERSION 3.25)
if(NOT VERILATOR OR NOT EXISTS "${VERILATOR}")
  message(FATAL_ERROR "verilator not found (install the verilator package)")
endif()
# hw/rtl/sources.txt lists every source in compile order (packages first),
# relative to hw/rtl.
file(STRINGS ${RTL_DIR}/sources.txt listed REGEX "^[^#]")
set(pkgs ${RTL_DIR}/lint.vlt)
set(all "")
foreach(f ${listed})
  list(APPEND all ${RTL_DIR}/${f})
endforeach()
# Every .sv under hw/rtl (fp32_add/ included) must be listed.
file(GLOB_RECURSE found ${RTL_DIR}/*.sv)
foreach(f ${found})
  if(NOT f IN_LIST all)
    message(FATAL_ERROR "RTL file ${f} is not listed in hw/rtl/sources.txt")
  endif()
endforeach()
# The Vitis kernel wrapper, linted with the engine below it.
set(kernel ${RTL_DIR}/../vitis/rtl/panama_engine_kernel.sv)
set(runs
    "panama_fifo|"
    "panama_divider|"
    "panama_fp32_add|"
    "panama_fp32_add16|"
    "panama_fp32_add16|-GLANES=32"
    "panama_elem16_widen|"
    "panama_elem16_round|"
    "panama_ipv4_checksum|"
    "panama_rx_frame_fifo|"
    "panama_rx_frame_fifo|-GDEPTH=512"
    "panama_frame_input|"
    "panama_classifier|"
    "panama_table|"
    "panama_decision|"
    "panama_action_builder|"
    "panama_datapath|"
    "panama_datapath|-GRD_LAT=1,-GDATA_ROWS=9216"
    "panama_counters|"
    "panama_axil_regs|"
    "panama_engine|"
    "panama_engine|-GNUM_ENTRIES=8,-GNUM_SLOTS=64,-GSLOT_WORDS=144"
    "panama_engine|-GNUM_ENTRIES=8,-GNUM_SLOTS=16,-GSLOT_WORDS=16"
    "panama_engine_kernel|")
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
  execute_process(COMMAND ${VERILATOR} --lint-only -Wall --top-module ${top} ${params} ${pkgs} ${all} ${kernel}
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
