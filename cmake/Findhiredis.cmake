# Findhiredis: finds the hiredis C client and defines the imported target
# hiredis::hiredis (the name hiredis >= 1.0's own CMake package uses).
#
# Used by fairlock's build and installed beside fairlockConfig.cmake, because
# Debian's hiredis 0.14 ships only a pkg-config file, no CMake package.
# Order: an existing hiredis::hiredis target; hiredis's own CMake package
# (hiredis >= 1.0); pkg-config; a plain header + library search.
#
# Sets hiredis_FOUND, hiredis_VERSION, hiredis_INCLUDE_DIRS, hiredis_LIBRARIES.

if(TARGET hiredis::hiredis)
  set(hiredis_FOUND TRUE)
  return()
endif()

find_package(hiredis CONFIG QUIET)
if(TARGET hiredis::hiredis)
  set(hiredis_FOUND TRUE)
  return()
endif()

find_package(PkgConfig QUIET)
if(PKG_CONFIG_FOUND)
  pkg_check_modules(PC_HIREDIS QUIET hiredis)
endif()

# hiredis.pc names .../include/hiredis; the headers are used as <hiredis/hiredis.h>.
set(_hiredis_hints)
foreach(_dir IN LISTS PC_HIREDIS_INCLUDEDIR PC_HIREDIS_INCLUDE_DIRS)
  get_filename_component(_parent "${_dir}" DIRECTORY)
  list(APPEND _hiredis_hints "${_dir}" "${_parent}")
endforeach()
find_path(hiredis_INCLUDE_DIR NAMES hiredis/hiredis.h HINTS ${_hiredis_hints})
unset(_hiredis_hints)
find_library(hiredis_LIBRARY NAMES hiredis HINTS ${PC_HIREDIS_LIBDIR} ${PC_HIREDIS_LIBRARY_DIRS})
mark_as_advanced(hiredis_INCLUDE_DIR hiredis_LIBRARY)

if(PC_HIREDIS_VERSION)
  set(hiredis_VERSION ${PC_HIREDIS_VERSION})
elseif(hiredis_INCLUDE_DIR AND EXISTS "${hiredis_INCLUDE_DIR}/hiredis/hiredis.h")
  file(STRINGS "${hiredis_INCLUDE_DIR}/hiredis/hiredis.h" _hiredis_version_lines
       REGEX "^#define HIREDIS_(MAJOR|MINOR|PATCH) [0-9]+")
  foreach(_part MAJOR MINOR PATCH)
    string(REGEX REPLACE ".*#define HIREDIS_${_part} ([0-9]+).*" "\\1" _hiredis_${_part} "${_hiredis_version_lines}")
  endforeach()
  set(hiredis_VERSION "${_hiredis_MAJOR}.${_hiredis_MINOR}.${_hiredis_PATCH}")
  unset(_hiredis_version_lines)
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(hiredis REQUIRED_VARS hiredis_LIBRARY hiredis_INCLUDE_DIR VERSION_VAR hiredis_VERSION)

if(hiredis_FOUND)
  # Both <hiredis/hiredis.h> and (as hiredis.pc allows) <hiredis.h> work.
  set(hiredis_INCLUDE_DIRS ${hiredis_INCLUDE_DIR} ${hiredis_INCLUDE_DIR}/hiredis)
  set(hiredis_LIBRARIES ${hiredis_LIBRARY})
  add_library(hiredis::hiredis UNKNOWN IMPORTED)
  set_target_properties(hiredis::hiredis PROPERTIES
    IMPORTED_LOCATION "${hiredis_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${hiredis_INCLUDE_DIRS}")
endif()
