#!/usr/bin/env bash
# The HTML report's budget (issue 25: a 1,024-rank job's page <= 10 MB, drawn
# in Chromium in under 5 s, its verdict naming the injected stragglers).
# Writes the generator's 1,024-rank job (lens-gen-job, EVENTS events), then
# prints: the time `report --html` takes, the page's size, Chromium's time
# from start to the page drawn (its own clock, performance.now() when it
# wrote #lens-check) and the whole headless run's wall time, and which of
# truth.json's stragglers the verdict names. Figures only: it asserts nothing.
# Usage: bench/report/report_html_bench.sh [BUILD_DIR] [EVENTS]
set -euo pipefail
build=${1:-build}; events=${2:-2000000}
bin=$build/bin
chromium=$(command -v chromium || command -v chromium-browser || true)
[ -n "$chromium" ] || { echo "report_html_bench: chromium is not installed (scripts/setup.sh)" >&2; exit 1; }
dir=$(mktemp -d /tmp/lens-html-bench.XXXXXX)
trap 'rm -rf "$dir"' EXIT
"$bin/lens-gen-job" -o "$dir/job" --events "$events" | tail -1
t0=$(date +%s.%N)
"$bin/nccl-lens" report --html -o "$dir/job.html" "$dir/job"
t1=$(date +%s.%N)
"$bin/nccl-lens" report --json "$dir/job" >"$dir/job.json"
t2=$(date +%s.%N)
"$chromium" --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$dir/profile" \
  --virtual-time-budget=30000 --dump-dom "$dir/job.html" 2>/dev/null >"$dir/dom.html"
t3=$(date +%s.%N)
python3 - "$dir" "$t0" "$t1" "$t2" "$t3" <<'PY'
import html, json, os, re, sys
d, t0, t1, t2, t3 = sys.argv[1], *map(float, sys.argv[2:])
truth = json.load(open(os.path.join(d, 'job', 'truth.json')))
rep = json.load(open(os.path.join(d, 'job.json')))
m = re.search(r'<pre id="lens-check"[^>]*data-done="1"[^>]*>(.*?)</pre>', open(os.path.join(d, 'dom.html')).read(), re.S)
chk = json.loads(html.unescape(m.group(1))) if m else None
size = os.path.getsize(os.path.join(d, 'job.html'))
print('ranks %d, instances %d, events %d' % (truth['ranks'], truth['instances'], truth['events']))
print('report --html: %.2f s, page %.2f MB (%d bytes); report --json %.2f s' % (t1 - t0, size / 1e6, size, t2 - t1))
if chk:
    print('chromium: page drawn %.2f s after its start (performance.now), headless run %.2f s wall; '
          'plots drawn %d of %d, errors %d' % (chk['ms'] / 1e3, t3 - t2, chk['plots_drawn'], chk['plots_expected'],
                                               len(chk['errors'])))
else:
    print('chromium: the page did not finish drawing (%.2f s wall)' % (t3 - t2))
text = next(v['text'] for v in rep['verdict'] if v['key'] == 'stragglers')
named = set(int(x) for x in re.findall(r'rank (\d+)', text))
want = sorted({s['rank'] for s in truth['stragglers']})
print('verdict names %d of the %d injected stragglers%s' % (
    len(named & set(want)), len(want), '' if named >= set(want) else ': missing %s' % sorted(set(want) - named)))
print('verdict: ' + text)
PY
