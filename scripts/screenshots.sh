#!/usr/bin/env bash
# The viewer's pictures in docs/, made from the current code: each picture is
# one run of the viewer at 1600x1000 (under xvfb-run when there is no
# display), with the knobs listed below.
#
#   scripts/screenshots.sh [--build DIR] [NAME...]
#
# NAME is a picture's name without .png (viewer-compare, ...); none: every
# one listed. DIR defaults to build/ (it must hold build/viz/viewer/attograd-viewer).
# The pictures of scenes that train (viewer-training, -translate, -pronounce*,
# -transformer) are not listed yet: their captions quote the numbers of one
# run, which a new run would change.
set -euo pipefail
cd "$(dirname "$0")/.."

build=build
if [[ ${1:-} == --build ]]; then
  build=$2
  shift 2
fi
viewer="$build/viz/viewer/attograd-viewer"
[[ -x $viewer ]] || { echo "screenshots.sh: no $viewer; build the viewer first" >&2; exit 2; }

# name: the viewer's arguments (the scene, then its knobs)
declare -A shots=(
  [viewer-compare]="--scene compare --set compare.scoring=additive,general --set compare.cell=0,1"
  [viewer-playground]="--scene playground"
  [viewer-scaling]="--scene scaling"
  [viewer-masks]="--scene masks"
  [viewer-multihead]="--scene multihead"
  [viewer-step]="--scene step"
  [viewer-graph]="--scene graph"
)
names=("$@")
((${#names[@]})) || names=($(printf '%s\n' "${!shots[@]}" | sort))

run=()
[[ -n ${DISPLAY:-} ]] || run=(xvfb-run -a -s "-screen 0 1600x1000x24")
for name in "${names[@]}"; do
  [[ -n ${shots[$name]:-} ]] || { echo "screenshots.sh: no picture '$name'" >&2; exit 2; }
  # shellcheck disable=SC2086  # the knobs are words
  "${run[@]}" "$viewer" ${shots[$name]} --size 1600x1000 --frames 5 --screenshot "docs/$name.png" > /dev/null
  echo "screenshots.sh: docs/$name.png ($viewer ${shots[$name]})"
done
