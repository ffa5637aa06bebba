# cmake -DFILE=path -DMAX_LINES=n -P CheckLineCount.cmake: fails when FILE has
# more than MAX_LINES lines (ctest readme_length, label lint: the README stays
# a short user's manual; reference detail goes to docs/).
file(READ "${FILE}" text)
string(REGEX MATCHALL "\n" newlines "${text}")
list(LENGTH newlines count)
if(count GREATER MAX_LINES)
  message(FATAL_ERROR "${FILE}: ${count} lines, more than ${MAX_LINES}: move reference detail to docs/")
endif()
message(STATUS "${FILE}: ${count} lines (at most ${MAX_LINES})")
