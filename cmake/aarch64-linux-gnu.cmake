# Cross-compiling for AArch64 with Debian's cross compiler (g++-aarch64-linux-gnu);
# the programs run under qemu-user (scripts/test_neon.sh: the NEON kernels'
# tests). Debian ships zlib for the host only, so zlib is compiled from its
# source package (cmake/zlib_source.cmake), and GoogleTest from its own
# (/usr/src/googletest).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
# Static programs: qemu-aarch64 then needs no AArch64 library folder.
set(CMAKE_EXE_LINKER_FLAGS_INIT "-static")
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# Header-only dependencies (stb) are the host's: the same on every architecture.
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
