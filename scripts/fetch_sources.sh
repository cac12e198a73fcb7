#!/usr/bin/env bash
# scripts/fetch_sources.sh DIR PACKAGE...: Debian source packages (apt-get
# source) unpacked into DIR, for the builds that compile a dependency Debian
# ships for the host only: the web page (Dear ImGui, zlib: scripts/web.sh)
# and the AArch64 tests (zlib: scripts/test_neon.sh). Fetches only when a
# package's folder (DIR/PACKAGE-*) is missing; adds a deb-src entry to apt's
# sources if there is none. Needs dpkg-dev (install_deps.sh web or neon).
set -euo pipefail
dir=$1
shift
mkdir -p "$dir"
wanted=()
for package in "$@"; do
  ls -d "$dir/$package"-*/ >/dev/null 2>&1 || wanted+=("$package")
done
[[ ${#wanted[@]} -eq 0 ]] && exit 0
sudo=""
[[ $(id -u) -ne 0 ]] && sudo="sudo"
if ! apt-cache showsrc "${wanted[0]}" 2>/dev/null | grep -q "^Package: ${wanted[0]}"; then
  # shellcheck source=/dev/null
  . /etc/os-release
  case "$ID" in
    debian) uri=http://deb.debian.org/debian; components=main ;;
    ubuntu) uri=http://archive.ubuntu.com/ubuntu; components="main universe" ;;
    *) echo "fetch_sources.sh: add a deb-src line for $ID to apt's sources (for apt-get source)" >&2; exit 1 ;;
  esac
  echo "attograd: adding deb-src $uri $VERSION_CODENAME $components (for apt-get source)"
  printf 'Types: deb-src\nURIs: %s\nSuites: %s\nComponents: %s\nSigned-By: /usr/share/keyrings/%s-archive-keyring.gpg\n' \
    "$uri" "$VERSION_CODENAME" "$components" "$ID" | $sudo tee /etc/apt/sources.list.d/attograd-deb-src.sources >/dev/null
  $sudo apt-get update -qq
fi
(cd "$dir" && apt-get source -qq "${wanted[@]}" 2>&1 | grep -v "unsandboxed as root" || true)
for package in "${wanted[@]}"; do
  ls -d "$dir/$package"-*/ >/dev/null 2>&1 || { echo "fetch_sources.sh: apt-get source $package failed" >&2; exit 1; }
done
