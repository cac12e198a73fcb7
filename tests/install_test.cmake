# ctest script: install the built tree into a scratch prefix, then configure,
# build and run tests/install_consumer and examples/pronounce against it with
# find_package (the second pronounces two words with the shipped model).
# Inputs: -DBUILD_DIR=... -DSOURCE_DIR=... -DWORK_DIR=... -DGENERATOR=...
file(REMOVE_RECURSE ${WORK_DIR})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix
                RESULT_VARIABLE rc OUTPUT_QUIET)
if(rc)
  message(FATAL_ERROR "cmake --install failed: ${rc}")
endif()

# Configures and builds the project in ${SOURCE_DIR}/${source} against the
# installed package, into ${WORK_DIR}/${build}; `what` names it in failures.
function(build_against_package source build what)
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR}/${source} -B ${WORK_DIR}/${build}
                          -G ${GENERATOR} -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix
                          -DCMAKE_CXX_FLAGS=${CXX_FLAGS}
                          -DCMAKE_EXE_LINKER_FLAGS=${CXX_FLAGS}
                  RESULT_VARIABLE rc)
  if(rc)
    message(FATAL_ERROR "configuring ${what} with find_package(attograd) failed: ${rc}")
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK_DIR}/${build} RESULT_VARIABLE rc)
  if(rc)
    message(FATAL_ERROR "building ${what} failed: ${rc}")
  endif()
endfunction()

build_against_package(tests/install_consumer build "the consumer")
execute_process(COMMAND ${WORK_DIR}/build/consumer RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "the consumer program failed: ${rc}")
endif()

build_against_package(examples/pronounce pronounce "examples/pronounce")
execute_process(COMMAND ${WORK_DIR}/pronounce/pronounce ${SOURCE_DIR}/translate/models/g2p-cmudict.npz
                        knife Xylophone
                RESULT_VARIABLE rc OUTPUT_VARIABLE out)
if(rc)
  message(FATAL_ERROR "examples/pronounce failed: ${rc}")
endif()
if(NOT out MATCHES "^knife\t[0-9.]+\tN AY F\n" OR NOT out MATCHES "\nxylophone\t[0-9.]+\tZ AY L AH F OW N\n")
  message(FATAL_ERROR "examples/pronounce said:\n${out}")
endif()
