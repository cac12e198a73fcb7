#!/bin/sh
# check_row_kernel_symbols.sh OBJECT...: the avx2 and avx512 builds of the row
# kernels (CMakeLists.txt) must define no weak function in AVX code. A weak
# function is an inline function or template instance the linker keeps one
# copy of for the whole program; one compiled for AVX-512 could be the copy an
# AVX2 CPU runs, and crash it (core/src/fast/vector_lanes.h says how the
# builds avoid them: the set is switched on after the headers, so what a
# header defines, and the instances of its templates, stay baseline x86-64).
# A weak function in baseline code is harmless: the sanitizer builds, at -O2,
# leave some template instances out of line. AVX code is found by its
# VEX-encoded instructions, whose names start with v (vmovups, vfmadd231ps).
status=0
functions=0
for object in "$@"; do
  for symbol in $(nm "$object" | awk '$2 == "W" { print $3 }'); do
    functions=$((functions + 1))
    if objdump -d --no-show-raw-insn --disassemble="$symbol" "$object" |
        awk -F'\t' 'NF >= 2 && $2 ~ /^v/ { found = 1 } END { exit !found }'; then
      echo "$object: the weak function $(echo "$symbol" | c++filt) is AVX code:"
      echo "  any file's copy of it may be the one the program runs"
      status=1
    fi
  done
done
[ $status -eq 0 ] &&
  echo "no weak function in AVX code in the $# objects of the SIMD row kernel builds ($functions weak, baseline)"
exit $status
