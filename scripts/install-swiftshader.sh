#!/usr/bin/env bash
# Install Google's SwiftShader Vulkan ICD (a CPU Vulkan driver) from Debian's
# chromium-common package, without installing Chromium itself.
#
# Usage: scripts/install-swiftshader.sh [DIR]   (default /opt/vkamp/swiftshader)
# Prints the path of the ICD JSON; use it as VK_ICD_FILENAMES (or
# VK_DRIVER_FILES) to select SwiftShader.
set -euo pipefail

DIR="${1:-/opt/vkamp/swiftshader}"
SO_NAME="libvk_swiftshader.so"
JSON_NAME="vk_swiftshader_icd.json"

mkdir -p "$DIR"
DIR="$(cd "$DIR" && pwd -P)"
SO="$DIR/$SO_NAME"
JSON="$DIR/$JSON_NAME"

if [[ -f "$JSON" && -f "$SO" ]]; then
    echo "$JSON"
    exit 0
fi

for tool in apt-get dpkg sed find; do
    command -v "$tool" >/dev/null 2>&1 || { echo "install-swiftshader: missing $tool" >&2; exit 1; }
done

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
# Let apt's unprivileged _apt user write the download here (avoids the
# "Download is performed unsandboxed" warning when running as root).
if [[ $EUID -eq 0 ]] && id _apt >/dev/null 2>&1; then
    chown _apt "$TMP" 2>/dev/null || true
fi
cd "$TMP"

if ! apt-get download chromium-common >&2; then
    echo "install-swiftshader: download failed; running apt-get update" >&2
    apt-get update >&2
    apt-get download chromium-common >&2
fi

DEB="$(find "$TMP" -maxdepth 1 -name 'chromium-common_*.deb' | head -n 1)"
[[ -n "$DEB" ]] || { echo "install-swiftshader: no chromium-common .deb downloaded" >&2; exit 1; }
dpkg -x "$DEB" "$TMP/root"

SRC_SO="$TMP/root/usr/lib/chromium/$SO_NAME"
SRC_JSON="$(find "$TMP/root" -name "$JSON_NAME" -type f | head -n 1)"
[[ -f "$SRC_SO" ]] || { echo "install-swiftshader: $SO_NAME not in package" >&2; exit 1; }
[[ -n "$SRC_JSON" ]] || { echo "install-swiftshader: $JSON_NAME not in package" >&2; exit 1; }

# Install the .so first and the JSON last (atomically via rename), so that the
# idempotency check above never sees a JSON without its library.
install -m 0644 "$SRC_SO" "$SO.tmp"
mv -f "$SO.tmp" "$SO"
# Absolute library_path; '|' as the sed delimiter since the path contains '/'.
sed -E "s|\"library_path\"[[:space:]]*:[[:space:]]*\"[^\"]*\"|\"library_path\": \"$SO\"|" \
    "$SRC_JSON" > "$JSON.tmp"
grep -q "\"library_path\": \"$SO\"" "$JSON.tmp" || {
    rm -f "$JSON.tmp"
    echo "install-swiftshader: failed to rewrite library_path" >&2
    exit 1
}
chmod 0644 "$JSON.tmp"
mv -f "$JSON.tmp" "$JSON"

echo "$JSON"
