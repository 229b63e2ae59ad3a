# Install rules and the CMake package: after `cmake --install`, a consumer
# project does find_package(nosync) and links nosync::kernels and
# nosync::sanitizer. Parts that were switched off are simply not in the package.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(NOSYNC_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/nosync")
set(_exported rules)

install(TARGETS nosync_rules EXPORT nosyncTargets)
set_target_properties(nosync_rules PROPERTIES EXPORT_NAME rules)
install(DIRECTORY "${PROJECT_SOURCE_DIR}/rules/include/" DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")

if(TARGET nosync_kernels)
  # The kernels' public link interface names LibTorch through nosync::torch.
  set_target_properties(nosync_torch PROPERTIES EXPORT_NAME torch)
  set_target_properties(nosync_kernels PROPERTIES EXPORT_NAME kernels)
  # LibTorch is linked by full path, which CMAKE_INSTALL_RPATH_USE_LINK_PATH
  # does not cover: name its lib directory for the installed library.
  set_property(TARGET nosync_kernels APPEND PROPERTY INSTALL_RPATH "${NOSYNC_TORCH_ROOT}/lib")
  target_include_directories(nosync_kernels INTERFACE $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  install(TARGETS nosync_torch nosync_kernels EXPORT nosyncTargets
    LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}")
  install(DIRECTORY "${PROJECT_SOURCE_DIR}/kernels/include/" DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")
  list(APPEND _exported kernels)
endif()

if(TARGET nosync_sanitizer)
  set_target_properties(nosync_sanitizer PROPERTIES EXPORT_NAME sanitizer)
  target_include_directories(nosync_sanitizer INTERFACE $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  install(TARGETS nosync_sanitizer EXPORT nosyncTargets LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}")
  install(DIRECTORY "${PROJECT_SOURCE_DIR}/sanitizer/include/" DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")
  if(NOSYNC_RUN)
    install(PROGRAMS "${NOSYNC_RUN}" DESTINATION "${CMAKE_INSTALL_BINDIR}")
  endif()
  install(PROGRAMS "${PROJECT_SOURCE_DIR}/sanitizer/tools/nosync-merge" DESTINATION "${CMAKE_INSTALL_BINDIR}")
  list(APPEND _exported sanitizer)
endif()

install(EXPORT nosyncTargets NAMESPACE nosync:: DESTINATION "${NOSYNC_INSTALL_CMAKEDIR}")
set(NOSYNC_EXPORTED_COMPONENTS "${_exported}")
configure_package_config_file(
  "${PROJECT_SOURCE_DIR}/cmake/nosyncConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/nosyncConfig.cmake"
  INSTALL_DESTINATION "${NOSYNC_INSTALL_CMAKEDIR}")
write_basic_package_version_file("${PROJECT_BINARY_DIR}/nosyncConfigVersion.cmake"
  COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/nosyncConfig.cmake" "${PROJECT_BINARY_DIR}/nosyncConfigVersion.cmake"
  DESTINATION "${NOSYNC_INSTALL_CMAKEDIR}")
