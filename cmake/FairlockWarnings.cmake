# Compiler warnings for fairlock's own targets, never for a parent project.
#
# fairlock_target_warnings(<target>...)
#   Adds -Wall -Wextra -Wpedantic (GCC, Clang) to each target, as PRIVATE
#   compile options, plus -Werror when FAIRLOCK_WARNINGS_AS_ERRORS is ON.
#
# fairlock_warnings_in_directory(<dir>)
#   The same for every compiled target defined in <dir> and its
#   subdirectories (the top-level CMakeLists.txt calls it once, at the end,
#   for the whole tree: library, tools, examples, tests, bench).

function(fairlock_target_warnings)
  set(gnu_like "$<CXX_COMPILER_ID:GNU,Clang,AppleClang>")
  foreach(target IN LISTS ARGN)
    target_compile_options(${target} PRIVATE
      "$<${gnu_like}:-Wall;-Wextra;-Wpedantic>"
      "$<$<AND:${gnu_like},$<BOOL:${FAIRLOCK_WARNINGS_AS_ERRORS}>>:-Werror>")
  endforeach()
endfunction()

function(fairlock_warnings_in_directory dir)
  get_property(targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
  foreach(target IN LISTS targets)
    get_target_property(type ${target} TYPE)
    if(type MATCHES "^(EXECUTABLE|STATIC_LIBRARY|SHARED_LIBRARY|MODULE_LIBRARY|OBJECT_LIBRARY)$")
      fairlock_target_warnings(${target})
    endif()
  endforeach()
  get_property(subdirs DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
  foreach(subdir IN LISTS subdirs)
    fairlock_warnings_in_directory("${subdir}")
  endforeach()
endfunction()
