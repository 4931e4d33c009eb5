# Vivado: packages the RTL engine (hw/rtl + the Vitis wrapper
# hw/vitis/rtl/panama_engine_kernel.sv) as an IP and then as a Vitis RTL
# kernel (.xo).
# Usage: vivado -mode batch -source package_rtl_kernel.tcl -tclargs
#          <part> <top module> <kernel name> <vlnv> <kernel.xml> <out.xo> <work dir> <source files...>
if {[llength $argv] < 8} {
  puts stderr "usage: vivado -mode batch -source package_rtl_kernel.tcl -tclargs <part> <top> <kernel> <vlnv> <kernel.xml> <out.xo> <work dir> <sources...>"
  exit 2
}
set part [lindex $argv 0]
set top [lindex $argv 1]
set kernel [lindex $argv 2]
lassign [split [lindex $argv 3] :] vendor library name version
set kernel_xml [lindex $argv 4]
set out_xo [lindex $argv 5]
set work_dir [lindex $argv 6]
set sources [lrange $argv 7 end]

file mkdir $work_dir
create_project -force panama_rtl_kernel $work_dir/project -part $part
add_files -norecurse $sources
set_property file_type SystemVerilog [get_files *.sv]
set_property top $top [current_fileset]
update_compile_order -fileset sources_1

ipx::package_project -root_dir $work_dir/ip -vendor $vendor -library $library -taxonomy /KernelIP -import_files -set_current false
ipx::unload_core $work_dir/ip/component.xml
ipx::edit_ip_in_project -upgrade true -name tmp_edit_project -directory $work_dir/ip $work_dir/ip/component.xml
set core [ipx::current_core]
set_property core_revision 1 $core
set_property version $version $core
set_property name $name $core
foreach up [ipx::get_user_parameters] { ipx::remove_user_parameter [get_property NAME $up] $core }

# Bus interfaces: AXI4-Stream in/out (one pair per QSFP28 cage) and
# AXI4-Lite control, all on ap_clk.
foreach busif {s_axis m_axis s_axis_p1 m_axis_p1 s_axi_control} {
  if {[llength [ipx::get_bus_interfaces -quiet $busif -of_objects $core]]} {
    ipx::associate_bus_interfaces -busif $busif -clock ap_clk $core
  }
}
# The register map: one address block covering the engine's 14 address bits.
# ipx::package_project may already have inferred the memory map from the
# AXI4-Lite interface, and adding a name that exists is an error in batch
# mode: each object is taken when it exists and created otherwise.
proc panama_get_or_add {get add name parent} {
  set obj [$get -quiet $name -of_objects $parent]
  if {[llength $obj]} { return $obj }
  return [$add $name $parent]
}
set mm [panama_get_or_add ipx::get_memory_maps ipx::add_memory_map s_axi_control $core]
set_property slave_memory_map_ref s_axi_control [ipx::get_bus_interfaces s_axi_control -of_objects $core]
set block [panama_get_or_add ipx::get_address_blocks ipx::add_address_block reg0 $mm]
set_property range 0x4000 $block
set ctrl [panama_get_or_add ipx::get_registers ipx::add_register CTRL $block]
set_property address_offset 0x000 $ctrl
set_property size 32 $ctrl
set_property sdx_kernel true $core
set_property sdx_kernel_type rtl $core
# The kernel is free-running (no start/done handshake): the kernel DRCs of
# check_integrity must apply the ap_ctrl_none rules, not ap_ctrl_hs's.
set_property vitis_drc {ctrl_protocol ap_ctrl_none} $core
set_property ipi_drc {ignore_freq_hz true} $core
ipx::update_checksums $core
ipx::check_integrity -kernel $core
ipx::save_core $core
close_project -delete

package_xo -force -xo_path $out_xo -kernel_name $kernel -ip_directory $work_dir/ip -kernel_xml $kernel_xml -ctrl_protocol ap_ctrl_none
puts "panama: wrote $out_xo (kernel $kernel, top $top, part $part)"
exit 0
