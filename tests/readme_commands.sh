#!/usr/bin/env bash
# ctest readme_commands: runs every command README.md shows in its ```sh
# blocks, as a newcomer would after set-up, so that the README cannot drift
# from the code. Each runs from a scratch folder in which build/ is the
# build tree and translate/ the source tree's (the README's paths), with
# Enter pressed for every pause; it must exit 0, and a file it names after
# --save or --heatmap must exist afterwards.
#
# The set-up scripts are not run here, each for a reason it prints:
# scripts/test.sh is CI itself, scripts/run.sh builds the tree this test
# runs in, scripts/web.sh serves the page until stopped (its build is the
# ctest test web_site). The README's C++ tour and its CMake lines are built
# against the installed package by the test install_package
# (tests/install_test.cmake).
#
#   tests/readme_commands.sh SOURCE_DIR BUILD_DIR
set -uo pipefail
source_dir=$1
build_dir=$2
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
ln -s "$build_dir" "$scratch/build"
ln -s "$source_dir/translate" "$scratch/translate"
printf '\n%.0s' {1..1000} > "$scratch/enter.txt"  # Enter, for every pause

# The lines of the ```sh blocks, each without its trailing "# comment".
commands=$(awk '/^```/ { inside = ($0 == "```sh"); next }
                inside { sub(/[ \t]+#.*$/, ""); if ($0 != "") print }' "$source_dir/README.md")
[[ -n $commands ]] || { echo "readme_commands: no \`\`\`sh block in README.md"; exit 1; }

ran=0
failed=0
while IFS= read -r command; do
  case "$command" in
    scripts/test.sh*) echo "not run: $command  (CI runs it: .ci/run)"; continue ;;
    scripts/run.sh*) echo "not run: $command  (it builds the tree this test runs in)"; continue ;;
    scripts/web.sh*) echo "not run: $command  (it serves until stopped; ctest web_site builds the page)"; continue ;;
  esac
  echo "\$ $command"
  start=$SECONDS
  (cd "$scratch" && bash -c "$command" < enter.txt > out.txt 2>&1)
  status=$?
  ran=$((ran + 1))
  if ((status != 0)); then
    cat "$scratch/out.txt"
    echo "readme_commands: exit code $status: $command"
    failed=$((failed + 1))
    continue
  fi
  tail -3 "$scratch/out.txt"
  for file in $(grep -oE -- '--(save|heatmap) [^ ]+' <<< "$command" | cut -d' ' -f2); do
    if [[ ! -s "$scratch/$file" ]]; then
      echo "readme_commands: $command wrote no $file"
      failed=$((failed + 1))
    fi
  done
  echo "  ($((SECONDS - start)) s)"
done <<< "$commands"

echo "readme_commands: ran $ran commands from README.md, $failed failed"
((ran > 0 && failed == 0))
