# Vitis HLS: synthesizes the HLS engine (hw/hls/src/engine_top.cpp: a
# free-running DATAFLOW region of eight processes, the steps of
# hw/hls/include/panama/kernel.hpp) into a free-running streaming kernel,
# exports it as a Vitis kernel (.xo), and checks two things the C++ cannot
# pin down by itself (docs/hls.md):
#   - every process reached the II its PIPELINE pragma declares, and every
#     process is found in the reports (check_csynth.py on the csynth XML
#     reports; a process it cannot find fails the build);
#   - the AXI4-Lite offsets Vitis HLS assigned to the mailbox arguments are
#     those the driver uses (check_mailbox.py against hw/vitis/kernels.json).
# Either check failing fails the build.
# Usage: vitis_hls -f build_hls_kernel.tcl -tclargs <hw/hls dir> <top> <part> <clock ns> <out.xo> <work dir>
if {[llength $argv] != 6} {
  puts stderr "usage: vitis_hls -f build_hls_kernel.tcl -tclargs <hw/hls dir> <top> <part> <clock ns> <out.xo> <work dir>"
  exit 2
}
lassign $argv hls_dir top part clock_ns out_xo work_dir
set hls_dir [file normalize $hls_dir]
set repo_include [file normalize $hls_dir/../../include]
set script_dir [file dirname [file normalize [info script]]]
set kernels_json [file normalize $hls_dir/../vitis/kernels.json]
set python /usr/bin/python3

cd $work_dir
open_project -reset panama_hls
set_top $top
# PANAMA_VITIS_HLS selects the ap_uint / ap_axiu / hls::stream branch of
# hls_compat.hpp (also implied by __SYNTHESIS__ during synthesis).
add_files $hls_dir/src/engine_top.cpp -cflags "-std=c++14 -DPANAMA_VITIS_HLS -I$hls_dir/include -I$repo_include"
open_solution -reset -flow_target vitis solution
set_part $part
create_clock -period $clock_ns -name default
# Streams between the processes are FIFOs with the depths the STREAM
# pragmas give; a free-running (ap_ctrl_none) top needs no start/done
# handshake, and its processes restart on their own.
config_dataflow -default_channel fifo
csynth_design

# The top's report (csynth.xml) and every module's (<module>_csynth.xml).
set reports [glob -nocomplain panama_hls/solution/syn/report/*csynth.xml]
if {[catch {exec $python $script_dir/check_csynth.py {*}$reports 2>@1} out]} {
  puts stderr $out
  puts stderr "panama: a process missed its II or is missing from the reports; see panama_hls/solution/syn/report"
  exit 1
}
puts $out

export_design -format xo -output $out_xo

set headers [glob -nocomplain panama_hls/solution/impl/misc/drivers/*/src/x${top}_hw.h]
if {[llength $headers] != 1} {
  puts stderr "panama: expected one generated x${top}_hw.h, found [llength $headers]"
  exit 1
}
if {[catch {exec $python $script_dir/check_mailbox.py [lindex $headers 0] $kernels_json 2>@1} out]} {
  puts stderr $out
  exit 1
}
puts $out
puts "panama: wrote $out_xo (top $top, part $part, clock $clock_ns ns)"
exit 0
