# Vitis HLS: synthesizes the HLS engine (hw/hls/src/engine_top.cpp) into a
# free-running streaming kernel and exports it as a Vitis kernel (.xo).
# Usage: vitis_hls -f build_hls_kernel.tcl -tclargs <source dir> <top> <part> <clock ns> <out.xo> <work dir>
if {[llength $argv] != 6} {
  puts stderr "usage: vitis_hls -f build_hls_kernel.tcl -tclargs <hw/hls dir> <top> <part> <clock ns> <out.xo> <work dir>"
  exit 2
}
lassign $argv hls_dir top part clock_ns out_xo work_dir
set repo_include [file normalize $hls_dir/../../include]

cd $work_dir
open_project -reset panama_hls
set_top $top
add_files $hls_dir/src/engine_top.cpp -cflags "-std=c++14 -I$hls_dir/include -I$repo_include"
open_solution -reset -flow_target vitis solution
set_part $part
create_clock -period $clock_ns -name default
csynth_design
export_design -format xo -output $out_xo
puts "panama: wrote $out_xo (top $top, part $part, clock $clock_ns ns)"
exit 0
