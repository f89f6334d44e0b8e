#!/usr/bin/env bash
# cmake --install into a temporary prefix: the plugin, the CLI, the public
# headers, the man page and nccl-lens.pc are there; pkg-config works against
# it (and a program including the headers compiles with its Cflags); the
# installed CLI runs and finds the installed plugin beside itself; the man page
# is gzipped, LICENSE and the copyright file are there, the shell completion
# matches the --help texts; then the Debian package (cpack -G DEB) lists the
# same files, its maintainer and its dependencies
# (skipped, with the reason, when dpkg-deb is missing).
# Usage: test_install.sh BUILD_DIR
set -euo pipefail
build=$1
tmp=$(mktemp -d /tmp/lens-install-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

p=$tmp/prefix
cmake --install "$build" --prefix "$p" >"$tmp/install.log" || { cat "$tmp/install.log"; fail "cmake --install"; }
files=(bin/nccl-lens lib/libnccl-profiler-lens.so include/nccl-lens/control.h include/nccl-lens/trace_format.h
  include/nccl-lens/live.h include/nccl-lens/registry.h include/nccl-lens/nccl_profiler_abi.h
  lib/pkgconfig/nccl-lens.pc share/man/man1/nccl-lens.1.gz share/doc/nccl-lens/README.md
  share/doc/nccl-lens/docs/cli.md share/doc/nccl-lens/LICENSE share/doc/nccl-lens/copyright
  share/bash-completion/completions/nccl-lens share/zsh/vendor-completions/_nccl-lens)
for f in "${files[@]}"; do
  [ -f "$p/$f" ] || fail "missing $f under the prefix"
done
[ -x "$p/bin/nccl-lens" ] || fail "bin/nccl-lens not executable"
echo "installed: ${#files[@]} files checked"

# pkg-config against the prefix only
export PKG_CONFIG_PATH=$p/lib/pkgconfig PKG_CONFIG_LIBDIR=$p/lib/pkgconfig
flags=$(pkg-config --cflags --libs nccl-lens) || fail "pkg-config --cflags --libs nccl-lens"
echo "pkg-config --cflags --libs: $flags"
inc=${flags#-I}; inc=${inc%% *}
[ "$(cd "$inc" && pwd -P)" = "$(cd "$p/include" && pwd -P)" ] || fail "Cflags point to $inc, not $p/include"
plugin=$(pkg-config --variable=plugin nccl-lens)
[ -f "$plugin" ] || fail "pkg-config plugin variable $plugin is not a file"
[ "$(pkg-config --modversion nccl-lens)" = "$("$p/bin/nccl-lens" --version | grep -o '[0-9][0-9.]*' | head -1)" ] ||
  fail "pkg-config version differs from nccl-lens --version"
cat >"$tmp/use.c" <<'C'
#include <nccl-lens/control.h>
#include <nccl-lens/trace_format.h>
int main(void) { int (*set)(int) = ncclLensSetEventMask; return set == 0; }
C
# shellcheck disable=SC2086
cc $flags -fsyntax-only "$tmp/use.c" || fail "a program including the installed headers does not compile"

# the installed CLI runs, and replays through the installed plugin
"$p/bin/nccl-lens" --version || fail "installed nccl-lens --version"
"$p/bin/nccl-lens" replay --scenario allreduce --nodes 1 --ranks-per-node 2 --iters 2 --out "$tmp/traces" \
  --quiet >"$tmp/replay.log" 2>&1 || { cat "$tmp/replay.log"; fail "installed nccl-lens replay"; }
ls "$tmp"/traces/*.lens >/dev/null || fail "the installed replay wrote no trace"
"$p/bin/nccl-lens" summary "$tmp/traces" >/dev/null || fail "installed nccl-lens summary"
gzip -t "$p/share/man/man1/nccl-lens.1.gz" || fail "the man page is not gzipped"
if command -v man >/dev/null; then
  man -l "$p/share/man/man1/nccl-lens.1.gz" 2>&1 | grep -q "nccl-lens - NCCL profiler plugin" || fail "man page does not render"
fi
grep -q "Apache License" "$p/share/doc/nccl-lens/LICENSE" || fail "LICENSE is not the Apache License"
grep -q "^License: Apache-2.0" "$p/share/doc/nccl-lens/copyright" || fail "copyright names no license"

# shell completion: the installed files are what the installed binary's --help texts give
# (completion/gen_completion.sh), and bash completes commands and a command's options
src=$(cd "$(dirname "$0")/../.." && pwd)
bash "$src/completion/gen_completion.sh" "$p/bin/nccl-lens" "$tmp" >/dev/null || fail "gen_completion.sh"
cmp -s "$tmp/nccl-lens.bash" "$p/share/bash-completion/completions/nccl-lens" ||
  fail "bash completion differs from the --help texts: run completion/gen_completion.sh build/bin/nccl-lens"
cmp -s "$tmp/_nccl-lens" "$p/share/zsh/vendor-completions/_nccl-lens" ||
  fail "zsh completion differs from the --help texts: run completion/gen_completion.sh build/bin/nccl-lens"
got=$(bash -c 'source "$1"; COMP_WORDS=(nccl-lens vali); COMP_CWORD=1; _nccl_lens; echo "${COMPREPLY[*]}"
  COMP_WORDS=(nccl-lens validate --li); COMP_CWORD=2; _nccl_lens; echo "${COMPREPLY[*]}"' _ \
  "$p/share/bash-completion/completions/nccl-lens")
[ "$got" = "$(printf 'validate\n--limit')" ] || fail "bash completion gave <$got>"
if command -v zsh >/dev/null; then zsh -n "$p/share/zsh/vendor-completions/_nccl-lens" || fail "zsh completion"; fi
echo "completion: bash and zsh match the --help texts"

# the Debian package
if ! command -v dpkg-deb >/dev/null; then
  echo "SKIP deb: dpkg-deb is not installed (Debian's dpkg)"
  exit 0
fi
cpack --config "$build/CPackConfig.cmake" -G DEB -B "$tmp/deb" >"$tmp/cpack.log" 2>&1 ||
  { cat "$tmp/cpack.log"; fail "cpack -G DEB"; }
deb=$(ls "$tmp"/deb/*.deb)
echo "package: $(basename "$deb")"
dpkg-deb -c "$deb" >"$tmp/list"
for f in usr/bin/nccl-lens usr/lib/libnccl-profiler-lens.so usr/include/nccl-lens/control.h \
  usr/lib/pkgconfig/nccl-lens.pc usr/share/man/man1/nccl-lens.1.gz usr/share/doc/nccl-lens/copyright \
  usr/share/bash-completion/completions/nccl-lens usr/share/zsh/vendor-completions/_nccl-lens; do
  grep -q " \./$f\$" "$tmp/list" || fail "dpkg-deb -c does not list /$f"
done
[ "$(dpkg-deb -f "$deb" Package)" = nccl-lens ] || fail "package name"
maint=$(dpkg-deb -f "$deb" Maintainer)
echo "Maintainer: $maint"
[ "$maint" = "nccl-lens developers <nccl-lens@users.noreply.github.com>" ] || fail "Maintainer is '$maint'"
! grep -q " \./usr/share/man/man1/nccl-lens\.1\$" "$tmp/list" || fail "the .deb has the man page uncompressed"
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
for d in libzstd libbpf libc6; do
  grep -q "$d" <<<"$depends" || fail "Depends lacks $d"
done
echo "ok"
