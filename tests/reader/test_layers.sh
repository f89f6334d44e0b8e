#!/usr/bin/env bash
# The layers of tools/ (README, "Layout"): the reader (tools/reader/) knows
# no analysis, an analysis (tools/analysis/<name>/) knows no view.
#   - no symbol the reader's archive needs is defined by the analyses';
#   - no reader file includes an analysis header, no analysis file a view's
#     (tools/<command>/) header or the reader's private one.
# Usage: test_layers.sh SOURCE_DIR BUILD_DIR
set -uo pipefail
src=$1 build=$2
fail=0
need=$(nm -u "$build/lib/liblens_reader.a" | awk '{print $NF}' | sort -u)
have=$(nm --defined-only "$build/lib/liblens_analysis.a" | awk 'NF==3 && $2 ~ /[TDBR]/ {print $3}' | sort -u)
both=$(comm -12 <(echo "$need") <(echo "$have"))
if [ -n "$both" ]; then echo "FAIL: the reader calls into the analyses: $both"; fail=1; fi
analysis_headers=$(cd "$src/tools/analysis" && find . -name '*.h' -printf '%f\n' | sort -u)
for h in $analysis_headers; do
  if grep -l "#include \"\(.*/\)\?$h\"" "$src"/tools/reader/*.c "$src"/tools/reader/*.h 2>/dev/null; then
    echo "FAIL: a reader file includes the analysis header $h"; fail=1
  fi
done
views=$(cd "$src/tools" && ls -d */ | tr -d / | grep -v '^\(reader\|analysis\|cli\)$')
for v in $views; do
  if grep -ln "#include \"$v/" "$src"/tools/analysis/*/*.[ch] "$src"/tools/analysis/*.h 2>/dev/null; then
    echo "FAIL: an analysis includes a header of the view $v"; fail=1
  fi
done
if grep -ln '#include "reader_priv.h"\|#include "reader/reader_priv.h"' "$src"/tools/analysis/*/*.[ch]; then
  echo "FAIL: an analysis includes the reader's private header"; fail=1
fi
[ $fail -eq 0 ] && echo "layers: 4 passed, 0 failed" || { echo "layers: failed"; exit 1; }
