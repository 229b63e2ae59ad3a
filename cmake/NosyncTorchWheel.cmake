# nosync_torch_wheel_link_options(<out-var> <torch root>)
# The torch wheel's CUDA libraries find their siblings (cuSPARSELt, NVSHMEM,
# cuFile) through RPATHs relative to site-packages, which the linker does not
# follow: it needs those directories spelled out. Used by nosync itself and by
# test projects that build user code against the same wheel.
function(nosync_torch_wheel_link_options out torch_root)
  file(GLOB _nv_lib_dirs "${torch_root}/../nvidia/*/lib")
  set(_opts "")
  foreach(_d ${_nv_lib_dirs} ${CUDAToolkit_LIBRARY_DIR})
    list(APPEND _opts "LINKER:-rpath-link,${_d}")
  endforeach()
  set(${out} ${_opts} PARENT_SCOPE)
endfunction()
