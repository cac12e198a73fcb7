# zlib compiled from Debian's source package (scripts/fetch_sources.sh), for
# the builds whose target Debian ships no zlib for: the web page (cmake/web.cmake)
# and the AArch64 tests (cmake/aarch64-linux-gnu.cmake). Defines ZLIB::ZLIB,
# as find_package(ZLIB) does.
set(ZLIB_SOURCE_DIR "" CACHE PATH "zlib's sources (apt-get source zlib)")
if(NOT EXISTS "${ZLIB_SOURCE_DIR}/inflate.c")
  message(FATAL_ERROR "This build needs ZLIB_SOURCE_DIR: scripts/web.sh and scripts/test_neon.sh fetch it")
endif()
enable_language(C)
add_library(zlib_source STATIC
  ${ZLIB_SOURCE_DIR}/adler32.c ${ZLIB_SOURCE_DIR}/crc32.c ${ZLIB_SOURCE_DIR}/inffast.c
  ${ZLIB_SOURCE_DIR}/inflate.c ${ZLIB_SOURCE_DIR}/inftrees.c ${ZLIB_SOURCE_DIR}/zutil.c
  ${ZLIB_SOURCE_DIR}/deflate.c ${ZLIB_SOURCE_DIR}/trees.c)
target_include_directories(zlib_source SYSTEM PUBLIC $<BUILD_INTERFACE:${ZLIB_SOURCE_DIR}>)
target_compile_options(zlib_source PRIVATE -O2 -DHAVE_UNISTD_H -DHAVE_STDARG_H)
set_target_properties(zlib_source PROPERTIES POSITION_INDEPENDENT_CODE ON)
add_library(ZLIB::ZLIB ALIAS zlib_source)
# attograd_core links it privately; a static library's private links are part
# of the exported package.
install(TARGETS zlib_source EXPORT attogradTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
