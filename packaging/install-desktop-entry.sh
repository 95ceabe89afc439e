#!/bin/sh
# Registers the unpacked bundle with the desktop (menu entry + icon) for the current user.
# Run it from the bundle folder, or pass the bundle folder: ./install-desktop-entry.sh [DIR]
# --uninstall removes what it installed. Nothing outside ~/.local/share is touched.
set -eu
if [ "${1:-}" = "--uninstall" ]; then
    rm -f "${XDG_DATA_HOME:-$HOME/.local/share}/applications/evidence-desk.desktop" \
          "${XDG_DATA_HOME:-$HOME/.local/share}/icons/hicolor/scalable/apps/evidence-desk.svg" \
          "${XDG_DATA_HOME:-$HOME/.local/share}/icons/hicolor/256x256/apps/evidence-desk.png"
    echo "removed the Evidence Desk menu entry"
    exit 0
fi
DIR=$(cd "${1:-$(dirname "$0")}" && pwd)
EXE="$DIR/evidence-desk"
[ -x "$EXE" ] || { echo "install-desktop-entry: no executable at $EXE" >&2; exit 1; }
DATA="${XDG_DATA_HOME:-$HOME/.local/share}"
mkdir -p "$DATA/applications" "$DATA/icons/hicolor/scalable/apps" "$DATA/icons/hicolor/256x256/apps"
cp "$DIR/share/evidence-desk.svg" "$DATA/icons/hicolor/scalable/apps/evidence-desk.svg"
cp "$DIR/share/evidence-desk.png" "$DATA/icons/hicolor/256x256/apps/evidence-desk.png"
# Exec and TryExec point at this bundle, so no PATH change is needed; quote for spaces.
sed -e "s|^Exec=.*|Exec=\"$EXE\"|" -e "s|^TryExec=.*|TryExec=$EXE|" \
    "$DIR/share/evidence-desk.desktop" > "$DATA/applications/evidence-desk.desktop"
chmod 644 "$DATA/applications/evidence-desk.desktop"
command -v update-desktop-database >/dev/null 2>&1 && update-desktop-database "$DATA/applications" || true
echo "installed $DATA/applications/evidence-desk.desktop -> $EXE"
