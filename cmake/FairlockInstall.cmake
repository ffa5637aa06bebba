# Install rules (included by the top-level CMakeLists.txt when FAIRLOCK_INSTALL
# is ON): headers, libfairlock.a, the Lua scripts, the exported CMake package
# fairlock::fairlock and fairlock.pc. The `fairlock` command installs itself
# from tools/CMakeLists.txt.
include(CMakePackageConfigHelpers)

set(FAIRLOCK_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/fairlock"
    CACHE STRING "Where fairlockConfig.cmake is installed (relative to the prefix)")
set(FAIRLOCK_INSTALL_LUADIR "${CMAKE_INSTALL_DATADIR}/fairlock/lua"
    CACHE STRING "Where the protocol's Lua scripts are installed (relative to the prefix)")
mark_as_advanced(FAIRLOCK_INSTALL_CMAKEDIR FAIRLOCK_INSTALL_LUADIR)

install(DIRECTORY "${PROJECT_SOURCE_DIR}/include/fairlock"
        DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}"
        FILES_MATCHING PATTERN "*.h")
install(FILES "${FAIRLOCK_GEN_DIR}/include/fairlock/version.h"
        DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/fairlock")
install(TARGETS fairlock EXPORT fairlockTargets
        ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}"
        LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}")
install(FILES ${FAIRLOCK_LUA_FILES} DESTINATION "${FAIRLOCK_INSTALL_LUADIR}")

# CMake package: fairlockConfig.cmake, fairlockConfigVersion.cmake,
# fairlockTargets*.cmake and the Findhiredis module the config uses.
install(EXPORT fairlockTargets NAMESPACE fairlock:: DESTINATION "${FAIRLOCK_INSTALL_CMAKEDIR}")
configure_package_config_file(
  "${PROJECT_SOURCE_DIR}/cmake/fairlockConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/fairlockConfig.cmake"
  INSTALL_DESTINATION "${FAIRLOCK_INSTALL_CMAKEDIR}"
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR FAIRLOCK_INSTALL_LUADIR)
# 0.x: only the same minor version is compatible; from 1.0 on, the same major.
if(fairlock_VERSION_MAJOR EQUAL 0)
  set(_fairlock_compat SameMinorVersion)
else()
  set(_fairlock_compat SameMajorVersion)
endif()
write_basic_package_version_file(
  "${PROJECT_BINARY_DIR}/fairlockConfigVersion.cmake"
  VERSION "${fairlock_VERSION}"
  COMPATIBILITY ${_fairlock_compat})
unset(_fairlock_compat)
install(FILES "${PROJECT_BINARY_DIR}/fairlockConfig.cmake"
              "${PROJECT_BINARY_DIR}/fairlockConfigVersion.cmake"
              "${PROJECT_SOURCE_DIR}/cmake/Findhiredis.cmake"
        DESTINATION "${FAIRLOCK_INSTALL_CMAKEDIR}")

# fairlock.pc: written at install time, so that its prefix is the one actually
# installed to (`cmake --install build --prefix P` may differ from
# CMAKE_INSTALL_PREFIX at configure time).
foreach(_dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${_dir}}")
    set(FAIRLOCK_PC_${_dir} "${CMAKE_INSTALL_${_dir}}")
  else()
    set(FAIRLOCK_PC_${_dir} "\${prefix}/${CMAKE_INSTALL_${_dir}}")
  endif()
endforeach()
if(IS_ABSOLUTE "${FAIRLOCK_INSTALL_LUADIR}")
  set(FAIRLOCK_PC_LUADIR "${FAIRLOCK_INSTALL_LUADIR}")
else()
  set(FAIRLOCK_PC_LUADIR "\${prefix}/${FAIRLOCK_INSTALL_LUADIR}")
endif()
set(FAIRLOCK_PC_PREFIX "@CMAKE_INSTALL_PREFIX@")  # filled in at install time
configure_file("${PROJECT_SOURCE_DIR}/cmake/fairlock.pc.in" "${PROJECT_BINARY_DIR}/fairlock.pc.in" @ONLY)
install(CODE "configure_file([[${PROJECT_BINARY_DIR}/fairlock.pc.in]] [[${PROJECT_BINARY_DIR}/fairlock.pc]] @ONLY)")
install(FILES "${PROJECT_BINARY_DIR}/fairlock.pc" DESTINATION "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
