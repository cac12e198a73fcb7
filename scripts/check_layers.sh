#!/usr/bin/env bash
# Fails when an #include runs from a lower layer to a higher one.
#
#   scripts/check_layers.sh [ROOT]     ROOT defaults to the repository
#
# The layers, lowest first; a file may include its own layer and those below:
#   0 base      leaf utilities that know no Tensor: error.h, threads.h, allocator.h,
#               reference_mode.h (the reference switch's flag), core/src's zip.h and
#               core/src/fast's parallel.h (+ their .cpp)
#   1 kernels   core/include/attograd/kernels, core/src/fast/kernels and
#               core/src/gemm_naive.cpp: raw pointers; and core/src/fast's
#               vector_math.h/.cpp, the row kernels (SIMD exp, softmax, LayerNorm,
#               GRU rows), built once per instruction set, and row_kernels.h/.cpp,
#               which pick a set's by kernels' cpu_features
#   2 tensor    tensor.h, dtype.h; core/src tensor.cpp (with dtype.cpp,
#               shape.cpp, random.cpp, print.cpp) and the unrecorded
#               helpers under the ops (elementwise.h, reduce.h/.cpp, dim_layout.h,
#               tensor_impl_access.h: the library's write door to a TensorImpl),
#               and fault.h/.cpp (ATTOGRAD_FAULT, a wrong op result for tests)
#   3 autograd  autograd.h, autograd.cpp: nodes and the backward sweep
#   4 ops       ops.h, reference.h (the fused ops' composed references), the
#               ops_*.cpp, core/src/fast/flash_attention.cpp and tensor_methods.cpp;
#               gradcheck and npy
#               sit here too: gradcheck runs ops and backward, and npy is a
#               file format for tensors that nothing below needs; core.h, the
#               umbrella of all of core, is the top of this layer
#   5 nn        nn/ (attograd.h, the umbrella of core + nn, included)
#   6 viz       viz/ without the viewer: colour maps, heatmap export
#   7 translate translate/ (it draws alignments with viz), in three floors:
#     core      what knows no task: task.h (a task's examples and format),
#               data, translator (the model switch), predict, evaluation and
#               cmudict (the dictionary reader) (+ their .cpp)
#   8 tasks     each task's file and the task table (tasks.h): a task depends
#               on the floor below, never the reverse; a file under translate/
#               that the other two floors do not name is a task's
#   9 tools     what uses the table: model (saving and loading: a file names
#               its task), train, ensemble, pronouncer, report, and the
#               program (translate/main.cpp and the files beside it)
#  10 viewer    viz/viewer/: the scenes, which use viz and translate (the
#               translate scene trains its models)
# Tutorials, tests, benches and examples sit above everything and are not
# checked. A file under core/ that the table below does not place fails the
# check: place it on purpose.
#
# Includes are resolved as the compiler would: "attograd/..." (quotes or angle
# brackets) against core/include, nn/include and viz/include; other quoted
# names against the including file's directory. Headers found in neither place
# (system, imgui) are not ours and are skipped.
set -euo pipefail
shopt -s extglob
root=${1:-"$(cd "$(dirname "$0")/.." && pwd)"}
cd "$root"

names=(base kernels tensor autograd ops nn viz translate-core translate-tasks translate-tools
  viewer)

# Sets REPLY to the layer number of a repository-relative path, or to nothing.
# (The helpers here answer in REPLY, not on standard output: a command
# substitution forks, and a fork per include took the check 40 s.)
layer_of() {
  REPLY=""
  case "$1" in
    core/include/attograd/error.h | core/include/attograd/threads.h) REPLY=0 ;;
    core/include/attograd/allocator.h | core/src/fast/allocator.cpp) REPLY=0 ;;
    core/src/fast/parallel.h | core/src/fast/threads.cpp) REPLY=0 ;;
    core/include/attograd/reference_mode.h | core/src/reference_mode.cpp) REPLY=0 ;;
    core/src/fast/vector_math.h | core/src/fast/vector_math.cpp) REPLY=1 ;;
    core/src/fast/vector_math_layers.cpp | core/src/fast/vector_lanes.h) REPLY=1 ;;
    core/src/fast/row_kernels.h | core/src/fast/row_kernels*.cpp) REPLY=1 ;;
    core/src/zip.h | core/src/zip.cpp) REPLY=0 ;;
    core/include/attograd/kernels/* | core/src/fast/kernels/* | core/src/gemm_naive.cpp) REPLY=1 ;;
    core/include/attograd/tensor.h | core/include/attograd/dtype.h) REPLY=2 ;;
    core/src/tensor.cpp | core/src/elementwise.h | core/src/reduce.h | core/src/reduce.cpp) REPLY=2 ;;
    core/src/dim_layout.h | core/src/tensor_impl_access.h) REPLY=2 ;;
    core/src/dtype.cpp | core/src/shape.cpp) REPLY=2 ;;
    core/src/fault.h | core/src/fault.cpp) REPLY=2 ;;
    core/src/random.cpp | core/src/print.cpp) REPLY=2 ;;
    core/include/attograd/autograd.h | core/src/autograd.cpp) REPLY=3 ;;
    core/include/attograd/ops.h | core/include/attograd/gradcheck.h) REPLY=4 ;;
    core/include/attograd/reference.h) REPLY=4 ;;
    core/include/attograd/npy.h | core/include/attograd/core.h) REPLY=4 ;;
    core/src/ops_*.cpp | core/src/tensor_methods.cpp | core/src/fast/flash_attention.cpp) REPLY=4 ;;
    core/src/gradcheck.cpp | core/src/npy.cpp) REPLY=4 ;;
    nn/*) REPLY=5 ;;
    viz/viewer/*) REPLY=10 ;;
    translate/include/attograd/translate/@(task|data|translator|predict|evaluation|cmudict).h) REPLY=7 ;;
    translate/src/@(task|data|translator|predict|evaluation|cmudict).cpp) REPLY=7 ;;
    translate/src/one_kernel_thread.h) REPLY=7 ;;
    translate/include/attograd/translate/@(model|train|training_run|attention_measures|ensemble|pronouncer|report).h) REPLY=9 ;;
    translate/src/@(model|train|train_state|training_run|attention_measures|ensemble|pronouncer|report).cpp) REPLY=9 ;;
    translate/src/state_entries.h) REPLY=9 ;;
    translate/+([!/]).@(h|cpp)) REPLY=9 ;;
    translate/src/* | translate/include/*) REPLY=8 ;;
    viz/*) REPLY=6 ;;
  esac
}

# Sets REPLY to a/b/../c normalised to a/c (realpath -m would resolve symlinks too).
normalize() {
  local IFS=/ part out=()
  for part in $1; do
    case "$part" in
      . | '') ;;
      ..) [[ ${#out[@]} -gt 0 ]] && unset 'out[${#out[@]}-1]' ;;
      *) out+=("$part") ;;
    esac
  done
  REPLY="${out[*]}"
}

# Sets REPLY to the repository path an include names, or to nothing when it is not ours.
resolve() {
  local from_dir=$1 name=$2 dir
  REPLY=""
  if [[ $name == attograd/* ]]; then
    for dir in core/include nn/include viz/include translate/include; do
      if [[ -f $dir/$name ]]; then
        REPLY="$dir/$name"
        return
      fi
    done
  elif [[ -f $from_dir/$name ]]; then
    normalize "$from_dir/$name"
  fi
}

failures=0
checked=0
while IFS= read -r file; do
  file=${file#./}
  layer_of "$file"
  from=$REPLY
  if [[ -z $from ]]; then
    echo "$file: not placed in a layer: add it to scripts/check_layers.sh" >&2
    failures=$((failures + 1))
    continue
  fi
  checked=$((checked + 1))
  while IFS=: read -r line text; do
    [[ $text =~ ^[[:space:]]*#[[:space:]]*include[[:space:]]*[\<\"]([^\>\"]+)[\>\"] ]] || continue
    name=${BASH_REMATCH[1]}
    resolve "${file%/*}" "$name"
    [[ -z $REPLY ]] && continue
    layer_of "$REPLY"
    to=$REPLY
    [[ -z $to ]] && continue  # reported when the target itself is scanned
    if ((to > from)); then
      echo "$file:$line: ${names[from]} includes ${names[to]} ($name);" \
        "a layer may include only itself and the layers below it" >&2
      failures=$((failures + 1))
    fi
  done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]' "$file" || true)
done < <(find core/include core/src nn viz translate -type f \( -name '*.h' -o -name '*.cpp' \) | sort)

if ((failures > 0)); then
  echo "check_layers: $failures include(s) run the wrong way or files unplaced" >&2
  exit 1
fi
echo "check_layers: $checked files, every include points down (${names[*]})"
