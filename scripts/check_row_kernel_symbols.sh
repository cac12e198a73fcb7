#!/bin/sh
# check_row_kernel_symbols.sh OBJECT...: the avx2 and avx512 builds of the row
# kernels (CMakeLists.txt) must define no weak symbol. A weak symbol is an
# inline function or template the linker keeps one copy of for the whole
# program; one compiled for AVX-512 could be the copy an AVX2 CPU runs, and
# crash it (core/src/fast/vector_lanes.h says how the builds avoid them).
status=0
for object in "$@"; do
  weak=$(nm -C "$object" | grep -E ' [WVu] ')
  if [ -n "$weak" ]; then
    echo "$object defines weak symbols (any may replace another file's copy):"
    echo "$weak"
    status=1
  fi
done
[ $status -eq 0 ] && echo "no weak symbols in the $# objects of the SIMD row kernel builds"
exit $status
