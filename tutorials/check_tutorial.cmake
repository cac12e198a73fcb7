# Runs one tutorial straight through and checks what it printed and wrote.
#   cmake -DPROGRAM=path -DOUT_DIR=dir -DEXPECT_FILE=file -DHEATMAPS=a,b -P check_tutorial.cmake
# EXPECT_FILE holds one regular expression a line; each must match somewhere
# in the output (expected_lines.cmake).
# Each name in the comma-separated HEATMAPS must have been written as
# OUT_DIR/NAME.png and OUT_DIR/NAME.svg (the folder is emptied first, so a
# file left over from an earlier run does not count).
include(${CMAKE_CURRENT_LIST_DIR}/require_variables.cmake)
require_variables(check_tutorial.cmake PROGRAM OUT_DIR EXPECT_FILE)
get_filename_component(name ${PROGRAM} NAME)

file(REMOVE_RECURSE ${OUT_DIR})
execute_process(COMMAND ${PROGRAM} --no-pause --out ${OUT_DIR}
                OUTPUT_VARIABLE output ERROR_VARIABLE errors RESULT_VARIABLE status)
message("${output}${errors}")
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${name} exited with status ${status} (a FAILED check above, or an error)")
endif()

include(${CMAKE_CURRENT_LIST_DIR}/expected_lines.cmake)
expected_lines(${EXPECT_FILE} "${output}" missing count)
string(REPLACE "," ";" HEATMAPS "${HEATMAPS}")
foreach(heatmap IN LISTS HEATMAPS)
  foreach(extension png svg)
    set(file ${OUT_DIR}/${heatmap}.${extension})
    set(size 0)
    if(EXISTS ${file})
      file(SIZE ${file} size)
    endif()
    if(size EQUAL 0)
      string(APPEND missing "\n  heatmap not written: ${file}")
    endif()
  endforeach()
endforeach()
if(missing)
  message(FATAL_ERROR "${name}: missing from its run:${missing}")
endif()
message("${name}: exit status 0, all ${count} expected lines printed")
