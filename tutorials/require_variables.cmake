# require_variables(SCRIPT VAR...): each -DVAR=... a `cmake -P` script needs,
# or a stop that names the script and the missing one.
function(require_variables script)
  foreach(var ${ARGN})
    if(NOT DEFINED ${var})
      message(FATAL_ERROR "${script}: ${var} is not set")
    endif()
  endforeach()
endfunction()
