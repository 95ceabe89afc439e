#!/usr/bin/env bash
# `make bundle`: one-folder PyInstaller build in dist/evidence-desk/ and a tarball of it.
#
#   packaging/build.sh [PYTHON]     PYTHON defaults to .venv/bin/python (with the `bundle` extra)
#
# The build runs with LITELLM_LOCAL_MODEL_COST_MAP=True because PyInstaller imports litellm to
# list its submodules, and litellm would otherwise try to download its cost map (and wait on
# retries when offline).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PYTHON=${1:-$ROOT/.venv/bin/python}
APP=evidence-desk
DIST=$ROOT/dist
WORK=$ROOT/build/pyinstaller
cd "$ROOT"

if ! "$PYTHON" -c "import PyInstaller" 2>/dev/null; then
    echo "build: PyInstaller is not installed in $PYTHON; run: $PYTHON -m pip install -e '.[bundle]'" >&2
    exit 1
fi
VERSION=$("$PYTHON" -c "from core.version import app_version; print(app_version())")
if [ "$VERSION" = "0+unknown" ]; then
    echo "build: evidence-desk is not installed in $PYTHON (pip install -e '.[bundle]')" >&2
    exit 1
fi
ARCH=$(uname -m)
TARBALL=$DIST/$APP-$VERSION-linux-$ARCH.tar.gz

start=$(date +%s)
rm -rf "$DIST/$APP" "$WORK" "$DIST/$APP"-*.tar.gz
LITELLM_LOCAL_MODEL_COST_MAP=True "$PYTHON" -m PyInstaller --noconfirm --clean --log-level WARN \
    --distpath "$DIST" --workpath "$WORK" packaging/$APP.spec

# Desktop integration files sit beside the executable (not in _internal/), where a person and
# install-desktop-entry.sh find them.
mkdir -p "$DIST/$APP/share"
cp packaging/$APP.desktop resources/icons/$APP.svg resources/icons/$APP.png "$DIST/$APP/share/"
cp packaging/install-desktop-entry.sh "$DIST/$APP/"
cp packaging/README.md "$DIST/$APP/README.md"

tar -C "$DIST" -czf "$TARBALL" "$APP"
end=$(date +%s)
echo "build: $DIST/$APP ($(du -sh "$DIST/$APP" | cut -f1) on disk, $(find "$DIST/$APP" -type f | wc -l) files)"
echo "build: $TARBALL ($(du -h "$TARBALL" | cut -f1))"
echo "build: evidence-desk $VERSION built in $((end - start)) s"
