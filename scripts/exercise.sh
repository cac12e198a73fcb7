#!/usr/bin/env bash
# The exercises (tutorials/exercises/README.md): you write a piece of the
# library, its grader says what is right and what is not.
#   scripts/exercise.sh N              grade your exercise N (my-exercises/NN_name.cpp)
#   scripts/exercise.sh N --solution   grade the library's own code instead
#   scripts/exercise.sh N --viewer     open the viewer's scene with your code beside the
#                                      library's (exercise 11: your scoring function beside
#                                      general; the same W_a, so right, the pictures agree)
#   scripts/exercise.sh --status       grade every exercise of yours, a line each
# The first run copies every starter into my-exercises/ (git ignores it):
# edit your copy, never tutorials/exercises/starters/. Builds in build/ (or
# $ATTOGRAD_BUILD), configuring it when needed; installs missing packages.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${ATTOGRAD_BUILD:-build}
mine=$PWD/my-exercises
starters=tutorials/exercises/starters

usage() {
  echo "usage: scripts/exercise.sh N [--solution] [--viewer] | --status" >&2
  exit 2
}
number="" solution=0 status=0 viewer=()
for arg in "$@"; do
  case "$arg" in
    --solution) solution=1 ;;
    --viewer) viewer=(--viewer) ;;
    --status) status=1 ;;
    [0-9]|[0-9][0-9]) number=$(printf '%02d' "$((10#$arg))") ;;
    *) usage ;;
  esac
done
((status == 1)) || [[ -n "$number" ]] || usage

mkdir -p "$mine"
copied=0
for starter in "$starters"/*.cpp; do
  if [[ ! -e "$mine/$(basename "$starter")" ]]; then
    cp "$starter" "$mine/"
    copied=1
  fi
done

# The build: configured with your folder (again when a new starter was
# copied), so that each exercise has a target made from your file.
if ((copied == 1)) || ! grep -qs "^ATTOGRAD_MY_EXERCISES:PATH=$mine\$" "$build/CMakeCache.txt"; then
  scripts/install_deps.sh
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTOGRAD_MY_EXERCISES="$mine" \
    > /dev/null
fi

stem_of() {  # 03 -> 03_masked_softmax
  local file
  file=$(ls "$starters/$1"_*.cpp 2> /dev/null | head -n 1)
  [[ -n "$file" ]] || { echo "scripts/exercise.sh: no exercise $1 (ls $starters)" >&2; exit 2; }
  basename "$file" .cpp
}

grade() {  # grade STEM TARGET: builds TARGET, runs it; the grader's exit status
  if ! cmake --build "$build" --target "$2" > "$build/exercise-build.log" 2>&1; then
    cat "$build/exercise-build.log"
    echo "scripts/exercise.sh: $1 does not compile (the compiler's messages above)"
    return 1
  fi
  "$build/$2" "${viewer[@]}"
}

if ((status == 1)); then
  for starter in "$starters"/*.cpp; do
    stem=$(basename "$starter" .cpp)
    if grade "$stem" "exercise_$stem" > /dev/null 2>&1; then
      echo "  pass  $stem"
    else
      echo "  ----  $stem   (scripts/exercise.sh $((10#${stem%%_*})) says what is missing)"
    fi
  done
  exit 0
fi
stem=$(stem_of "$number")
if ((solution == 1)); then
  grade "$stem" "exercise_${stem}_solution"
else
  echo "Your file: my-exercises/$stem.cpp"
  grade "$stem" "exercise_$stem"
fi
