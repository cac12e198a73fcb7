#!/usr/bin/env bash
# The pictures README.md and docs/ show, made from the current code: each is
# one run of the viewer at 1600x1000 (under xvfb-run when there is no
# display) with its arguments in scripts/pictures.txt, written in place.
#
#   scripts/screenshots.sh [--build DIR] [NAME...]
#
# NAME is a picture's name without .png (viewer-compare, ...); none: every
# one listed. DIR defaults to build/ (it must hold viz/viewer/attograd-viewer,
# and web/ for the browser's pictures: scripts/web.sh builds it). The test
# viewer_test_screen_pictures fails when a committed picture differs from
# what this command draws now.
set -euo pipefail
cd "$(dirname "$0")/.."

build=build
if [[ ${1:-} == --build ]]; then
  build=$2
  shift 2
fi
viewer="$build/viz/viewer/attograd-viewer"
[[ -x $viewer ]] || { echo "screenshots.sh: no $viewer; build the viewer first" >&2; exit 2; }

# name -> the viewer's arguments, from pictures.txt ({repo} made this folder)
declare -A shots=()
while read -r name args; do
  [[ -z $name || $name == \#* ]] && continue
  shots[$name]=${args//\{repo\}/$PWD}
done < scripts/pictures.txt
names=("$@")
((${#names[@]})) || names=($(printf '%s\n' "${!shots[@]}" | sort))

run=()
[[ -n ${DISPLAY:-} ]] || run=(xvfb-run -a -s "-screen 0 1600x1000x24")
for name in "${names[@]}"; do
  [[ -n ${shots[$name]:-} ]] || { echo "screenshots.sh: no picture '$name'" >&2; exit 2; }
  # shellcheck disable=SC2206  # the arguments are words
  args=(${shots[$name]})
  frames=5
  for ((i = 0; i < ${#args[@]}; i++)); do
    [[ ${args[i]} == --frames ]] && frames=${args[i + 1]}
  done
  if [[ ${args[0]} == web ]]; then
    # The browser viewer: --scene S --set a=b ... become the page's query.
    [[ -f $build/web/index.html ]] || { echo "screenshots.sh: no $build/web; run scripts/web.sh" >&2; exit 2; }
    query="frames=$frames"
    for ((i = 1; i < ${#args[@]}; i += 2)); do
      [[ ${args[i]} == --frames ]] || query+="&${args[i]#--}=${args[i + 1]}"
    done
    out=$(mktemp -d)
    node tests/web/drive.js --site "$build/web" --out "$out" --query "$query" > /dev/null
    mv "$out/screen.png" "docs/$name.png"
    rm -r "$out"
    echo "screenshots.sh: docs/$name.png (the browser viewer, ?$query)"
  else
    "${run[@]}" "$viewer" "${args[@]}" --frames "$frames" --size 1600x1000 \
      --screenshot "docs/$name.png" > /dev/null
    echo "screenshots.sh: docs/$name.png ($viewer ${args[*]})"
  fi
done
