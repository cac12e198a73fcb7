# The WebAssembly build (Emscripten), included by the top-level CMakeLists.txt
# in place of the native find_package calls. scripts/web.sh configures it:
#
#   emcmake cmake -S . -B build-web -DIMGUI_SOURCE_DIR=... -DZLIB_SOURCE_DIR=...
#
# What differs from the native build, all here:
#   - no threads: the browser's main thread runs every op (threads.h says how
#     set_num_threads behaves), so Threads::Threads is an empty target;
#   - zlib and Dear ImGui are compiled from Debian's source packages (apt-get
#     source, fetched by scripts/web.sh into the build folder): Debian ships
#     them as x86 binaries only;
#   - every object is compiled with -fwasm-exceptions (attograd reports bad
#     input by throwing ag::Error; Emscripten turns catching off by default,
#     and its older way, -fexceptions, routes every call that may throw
#     through JavaScript; WebAssembly's own exceptions, which every current
#     browser runs, do not: tests/README.md has the pages' times) and -msimd128
#     (WebAssembly SIMD: the scalar GEMM kernel and the elementwise loops
#     vectorise to 128-bit lanes; every current browser runs it);
#   - C++ files see web_compat.h first: the C++20 library pieces Debian's
#     older Emscripten lacks.
set(IMGUI_SOURCE_DIR "" CACHE PATH "Dear ImGui's sources (apt-get source imgui)")
if(NOT EXISTS "${IMGUI_SOURCE_DIR}")
  message(FATAL_ERROR "The web build needs IMGUI_SOURCE_DIR: run scripts/web.sh, which fetches it")
endif()

add_compile_options(-fwasm-exceptions -msimd128
                    "$<$<COMPILE_LANGUAGE:CXX>:SHELL:-include ${CMAKE_CURRENT_LIST_DIR}/web_compat.h>")
add_link_options(-fwasm-exceptions)

add_library(Threads::Threads INTERFACE IMPORTED)

include(${CMAKE_CURRENT_LIST_DIR}/zlib_source.cmake)

# stb's headers: only the folder that holds them, never the host's /usr/include.
find_path(STB_INCLUDE_DIR stb_image_write.h PATHS /usr/include/stb NO_CMAKE_FIND_ROOT_PATH REQUIRED)

# Dear ImGui: the core, the GLFW backend (Emscripten's built-in GLFW) and the
# OpenGL3 backend speaking OpenGL ES 3 (WebGL 2, GLSL ES 3.00).
add_library(imgui_web STATIC
  ${IMGUI_SOURCE_DIR}/imgui.cpp ${IMGUI_SOURCE_DIR}/imgui_draw.cpp
  ${IMGUI_SOURCE_DIR}/imgui_tables.cpp ${IMGUI_SOURCE_DIR}/imgui_widgets.cpp
  ${IMGUI_SOURCE_DIR}/backends/imgui_impl_glfw.cpp
  ${IMGUI_SOURCE_DIR}/backends/imgui_impl_opengl3.cpp)
target_include_directories(imgui_web SYSTEM PUBLIC ${IMGUI_SOURCE_DIR} ${IMGUI_SOURCE_DIR}/backends)
target_compile_definitions(imgui_web PRIVATE IMGUI_IMPL_OPENGL_ES3)
