# ctest script: install the built tree into a scratch prefix, then configure,
# build and run against it with find_package: tests/install_consumer,
# examples/pronounce (it pronounces two words with the shipped model), and
# README.md's tour (its ```cpp block in a project made of its ```cmake lines),
# as a newcomer pastes them, and tutorial 18 (a scoring function of its own,
# trained by name) built with the same lines.
# Inputs: -DBUILD_DIR=... -DSOURCE_DIR=... -DWORK_DIR=... -DGENERATOR=...
# -DCXX_COMPILER=... (the build's own: a sanitizer's runtime is the compiler's)
# -DCXX_FLAGS=...
file(REMOVE_RECURSE ${WORK_DIR})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix
                RESULT_VARIABLE rc OUTPUT_QUIET)
if(rc)
  message(FATAL_ERROR "cmake --install failed: ${rc}")
endif()

# Configures and builds the project in the folder `source` against the
# installed package, into ${WORK_DIR}/${build}; `what` names it in failures.
function(build_against_package source build what)
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${source} -B ${WORK_DIR}/${build}
                          -G ${GENERATOR} -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix
                          -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
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

build_against_package(${SOURCE_DIR}/tests/install_consumer build "the consumer")
execute_process(COMMAND ${WORK_DIR}/build/consumer RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "the consumer program failed: ${rc}")
endif()

build_against_package(${SOURCE_DIR}/examples/pronounce pronounce "examples/pronounce")
execute_process(COMMAND ${WORK_DIR}/pronounce/pronounce ${SOURCE_DIR}/translate/models/g2p-cmudict.npz
                        knife Xylophone
                RESULT_VARIABLE rc OUTPUT_VARIABLE out)
if(rc)
  message(FATAL_ERROR "examples/pronounce failed: ${rc}")
endif()
if(NOT out MATCHES "^knife\t[0-9.]+\tN AY F\n" OR NOT out MATCHES "\nxylophone\t[0-9.]+\tZ AY L AH F OW N\n")
  message(FATAL_ERROR "examples/pronounce said:\n${out}")
endif()

# The text of README.md's first fenced block in `language`.
function(readme_block language out)
  file(READ ${SOURCE_DIR}/README.md readme)
  string(FIND "${readme}" "```${language}\n" begin)
  if(begin EQUAL -1)
    message(FATAL_ERROR "README.md has no ```${language} block")
  endif()
  string(LENGTH "```${language}\n" fence)
  math(EXPR begin "${begin} + ${fence}")
  string(SUBSTRING "${readme}" ${begin} -1 rest)
  string(FIND "${rest}" "\n```" end)
  string(SUBSTRING "${rest}" 0 ${end} block)
  set(${out} "${block}\n" PARENT_SCOPE)
endfunction()

readme_block(cpp tour_source)
readme_block(cmake tour_cmake)
set(tour ${WORK_DIR}/readme_tour)
file(WRITE ${tour}/main.cpp "${tour_source}")
file(WRITE ${tour}/CMakeLists.txt
     "cmake_minimum_required(VERSION 3.20)\nproject(readme_tour LANGUAGES CXX)\n"
     "set(CMAKE_CXX_STANDARD 20)\nadd_executable(my_program main.cpp)\n${tour_cmake}")
build_against_package(${tour} readme_tour_build "README.md's tour")
execute_process(COMMAND ${WORK_DIR}/readme_tour_build/my_program WORKING_DIRECTORY ${tour}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(rc OR NOT EXISTS ${tour}/additive.npz)
  message(FATAL_ERROR "README.md's tour failed (${rc}):\n${out}")
endif()

# A tutorial-18-style program: the same CMake lines build tutorial 18 itself.
set(own ${WORK_DIR}/own_scoring_function)
file(COPY ${SOURCE_DIR}/tutorials/tutorial_18_your_own_scoring_function.cpp
          ${SOURCE_DIR}/tutorials/tutorial.h DESTINATION ${own})
file(RENAME ${own}/tutorial_18_your_own_scoring_function.cpp ${own}/main.cpp)
file(WRITE ${own}/CMakeLists.txt
     "cmake_minimum_required(VERSION 3.20)\nproject(own_scoring_function LANGUAGES CXX)\n"
     "set(CMAKE_CXX_STANDARD 20)\nadd_executable(my_program main.cpp)\n${tour_cmake}"
     # where the tutorial finds the shipped model, as tutorials/CMakeLists.txt says
     "target_compile_definitions(my_program PRIVATE ATTOGRAD_SOURCE_DIR=\"${SOURCE_DIR}\")\n")
build_against_package(${own} own_scoring_function_build "tutorial 18 with README.md's CMake lines")
