#!/usr/bin/env bash
# Packs what run_gpu_check.sh needs from a build into one folder that can be
# copied to a GPU machine without this project's Debian libraries (the device
# machines of docs/gpu-check.md: Ubuntu's glibc, CUDA 13, PyTorch with NCCL's
# wheel, no libbpf, libyajl or libmicrohttpd):
#   DEST/build/bin: the CLI, lens-nccl-job and the other step binaries;
#   DEST/build/lib: the plugins and the NVTX recording injection;
#   DEST/deps: the CLI's shared libraries (ldd), glibc's and the C++ runtime's
#              left out (the machine's own, newer, serve).
# build/bin/nccl-lens there is a wrapper that gives those libraries to the CLI
# alone: on the jobs' LD_LIBRARY_PATH they would replace the libraries of
# Python and PyTorch (zlib, OpenSSL) with Debian's.
# Usage: tests/gpu/pack_build.sh BUILD_DIR DEST   then, there:
#   LENS_BUILD=DEST/build tests/gpu/run_gpu_check.sh OUTDIR [STEPS]
set -euo pipefail
B=${1:?usage: pack_build.sh BUILD_DIR DEST}
D=${2:?usage: pack_build.sh BUILD_DIR DEST}
if [ ! -x "$B/bin/nccl-lens" ] || [ ! -x "$B/bin/lens-nccl-job" ]; then
  echo "pack_build: $B has no bin/nccl-lens or bin/lens-nccl-job (NCCL's headers found at configure?)" >&2
  exit 1
fi
rm -rf "$D"
mkdir -p "$D/build/bin" "$D/build/lib" "$D/deps"
for f in lens-nccl-job lens-nvtx-dump-summary lens-bench lens-sched-pingpong; do
  if [ -x "$B/bin/$f" ]; then cp "$B/bin/$f" "$D/build/bin/"; fi
done
cp "$B/bin/nccl-lens" "$D/build/bin/nccl-lens.real"
cp "$B"/lib/*.so "$D/build/lib/"
ldd "$B/bin/nccl-lens" | awk '/=> \// { print $3 }' |
  grep -v -E '/(libc|libm|libpthread|libdl|librt|libresolv|ld-linux[^/]*|libstdc\+\+|libgcc_s)\.so' |
  while read -r lib; do cp -L "$lib" "$D/deps/"; done
cat >"$D/build/bin/nccl-lens" <<'EOF'
#!/bin/sh
# nccl-lens with the libraries it was built against (tests/gpu/pack_build.sh): for the CLI alone
d=$(cd "$(dirname "$0")" && pwd)
LD_LIBRARY_PATH=$d/../../deps${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} exec "$d/nccl-lens.real" "$@"
EOF
chmod +x "$D/build/bin/nccl-lens"
"$D/build/bin/nccl-lens" --version >/dev/null
echo "pack_build: $D ($(du -sh "$D" | cut -f1), $(find "$D/deps" -type f | wc -l) libraries for the CLI)"
