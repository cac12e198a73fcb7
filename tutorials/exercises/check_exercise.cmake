# Runs an exercise's grader and checks what it said.
#   cmake -DPROGRAM=path -DEXPECT_STATUS=0|1 -DEXPECT_FILE=file -P check_exercise.cmake
# The grader must exit with EXPECT_STATUS, and each line of EXPECT_FILE (a
# regular expression) must match somewhere in its output. The file is split
# by hand, as check_tutorial.cmake splits its own: a CMake list would merge
# elements at an unbalanced "[", and the regexes quote brackets.
foreach(var PROGRAM EXPECT_STATUS EXPECT_FILE)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check_exercise.cmake: ${var} is not set")
  endif()
endforeach()
get_filename_component(name ${PROGRAM} NAME)
execute_process(COMMAND ${PROGRAM} OUTPUT_VARIABLE output ERROR_VARIABLE errors
                RESULT_VARIABLE status)
message("${output}${errors}")
set(problems "")
if(NOT status STREQUAL EXPECT_STATUS)
  string(APPEND problems "\n  exit status ${status}, expected ${EXPECT_STATUS}")
endif()
file(READ ${EXPECT_FILE} rest)
while(NOT rest STREQUAL "")
  string(FIND "${rest}" "\n" end)
  string(SUBSTRING "${rest}" 0 ${end} regex)
  math(EXPR end "${end} + 1")
  string(SUBSTRING "${rest}" ${end} -1 rest)
  if(NOT output MATCHES "${regex}")
    string(APPEND problems "\n  no line matches: ${regex}")
  endif()
endwhile()
if(problems)
  message(FATAL_ERROR "${name}:${problems}")
endif()
