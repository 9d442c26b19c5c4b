# Sourced by run.sh and gpt.sh on the GPU machine, from the repository root,
# after prepare.sh ran here: unpacks the Vulkan loader, points it at the
# NVIDIA driver, and unpacks the binaries into $bin.
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
if [ -f "$icd" ]; then export VK_DRIVER_FILES=$icd VK_ICD_FILENAMES=$icd; fi
bin=/tmp/vkamp-bin
mkdir -p $bin
for f in .devbin/*.gz; do gunzip -c "$f" > "$bin/$(basename "$f" .gz)"; chmod +x "$bin/$(basename "$f" .gz)"; done
export CI=true
