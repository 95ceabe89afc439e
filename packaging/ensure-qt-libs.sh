#!/usr/bin/env bash
# Make sure the Debian libraries Qt needs are installed: `offscreen` (tests, screenshots) or
# `xcb` (a real window; includes offscreen's). As root it installs what is missing with apt-get;
# otherwise it prints the one apt-get line that would, and fails, so nobody meets Qt's own
# "could not load the Qt platform plugin" abort with no hint.
set -euo pipefail
want=${1:-offscreen}
list="$(dirname "$0")/qt-runtime-libs.txt"
command -v dpkg-query >/dev/null 2>&1 || exit 0  # not Debian: nothing we can check or install
missing=()
while read -r kind pkg _lib; do
  case "$kind" in ''|'#'*) continue ;; esac
  [ "$want" = xcb ] || [ "$kind" = offscreen ] || continue
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done < "$list"
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing Qt runtime libraries: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
else
  echo "Qt needs these Debian packages; install them with:" >&2
  echo "  sudo apt-get install ${missing[*]}" >&2
  exit 1
fi
