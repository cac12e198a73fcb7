# Runs one tutorial with a fault in one op it teaches (ATTOGRAD_FAULT, core/src/fault.h)
# and requires it to notice: a non-zero exit and at least one "check: ... FAILED"
# line, which names the check. So each of its checks of that op can fail.
#   cmake -DPROGRAM=path -DOUT_DIR=dir -DFAULT=op -P check_tutorial_fault.cmake
include(${CMAKE_CURRENT_LIST_DIR}/require_variables.cmake)
require_variables(check_tutorial_fault.cmake PROGRAM OUT_DIR FAULT)
get_filename_component(name ${PROGRAM} NAME)

file(REMOVE_RECURSE ${OUT_DIR})
execute_process(COMMAND ${CMAKE_COMMAND} -E env ATTOGRAD_FAULT=${FAULT}
                        ${PROGRAM} --no-pause --out ${OUT_DIR}
                OUTPUT_VARIABLE output ERROR_VARIABLE errors RESULT_VARIABLE status)
string(REGEX MATCHALL "check: [^\n]* \\.\\.\\. FAILED" failed "${output}")
list(LENGTH failed failures)
if(status EQUAL 0 OR failures EQUAL 0)
  message("${output}${errors}")
  message(FATAL_ERROR "${name} under ATTOGRAD_FAULT=${FAULT}: exit status ${status}, "
                      "${failures} failed checks; a check of ${FAULT}'s numbers should have "
                      "failed")
endif()
string(REPLACE ";" "\n  " failed "${failed}")
message("${name} under ATTOGRAD_FAULT=${FAULT}: exit status ${status}; failed:\n  ${failed}")
