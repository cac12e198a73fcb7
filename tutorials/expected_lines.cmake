# expected_lines(FILE OUTPUT MISSING COUNT): every line of FILE is a regular
# expression that must match somewhere in OUTPUT; MISSING gets a line for
# each that does not ("\n  no line matches: ..."), COUNT how many lines FILE
# has. The file is split by hand, not as a CMake list: a list would merge
# elements at an unbalanced "[", and the regexes quote brackets. Included by
# check_tutorial.cmake and exercises/check_exercise.cmake.
function(expected_lines file output missing_var count_var)
  set(missing "")
  set(count 0)
  file(READ ${file} rest)
  while(NOT rest STREQUAL "")
    string(FIND "${rest}" "\n" end)
    string(SUBSTRING "${rest}" 0 ${end} regex)
    math(EXPR end "${end} + 1")
    string(SUBSTRING "${rest}" ${end} -1 rest)
    math(EXPR count "${count} + 1")
    if(NOT output MATCHES "${regex}")
      string(APPEND missing "\n  no line matches: ${regex}")
    endif()
  endwhile()
  set(${missing_var} "${missing}" PARENT_SCOPE)
  set(${count_var} ${count} PARENT_SCOPE)
endfunction()
