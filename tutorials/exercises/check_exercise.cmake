# Runs an exercise's grader and checks what it said.
#   cmake -DPROGRAM=path -DEXPECT_STATUS=0|1 -DEXPECT_FILE=file -P check_exercise.cmake
# The grader must exit with EXPECT_STATUS, and each line of EXPECT_FILE (a
# regular expression) must match somewhere in its output (expected_lines.cmake).
include(${CMAKE_CURRENT_LIST_DIR}/../require_variables.cmake)
require_variables(check_exercise.cmake PROGRAM EXPECT_STATUS EXPECT_FILE)
get_filename_component(name ${PROGRAM} NAME)
execute_process(COMMAND ${PROGRAM} OUTPUT_VARIABLE output ERROR_VARIABLE errors
                RESULT_VARIABLE status)
message("${output}${errors}")
set(problems "")
if(NOT status STREQUAL EXPECT_STATUS)
  string(APPEND problems "\n  exit status ${status}, expected ${EXPECT_STATUS}")
endif()
include(${CMAKE_CURRENT_LIST_DIR}/../expected_lines.cmake)
expected_lines(${EXPECT_FILE} "${output}" missing count)
string(APPEND problems "${missing}")
if(problems)
  message(FATAL_ERROR "${name}:${problems}")
endif()
