"""Checks every view of a `replay --scenario ce` run (tests/cli/test_cli_ce.c).

argv: nccl-lens, trace dir, iterations, ranks, exposition file (agent --once).
The scenario runs AllGather (2 CeBatch), AlltoAll (3), Scatter (1) and
Gather (1) as copy-engine collectives on every rank, each with two CeSync;
every count below follows from that."""
import json
import re
import subprocess
import sys

cli, d, iters, ranks, prom = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
traces = sorted(__import__('glob').glob(d + '/*.lens'))
assert traces, 'no traces'
batches = {'AllGather': 2, 'AlltoAll': 3, 'Scatter': 1, 'Gather': 1}
per_func = iters * ranks
total = per_func * len(batches)


def run(*args):
    return subprocess.run([cli, *args, *traces], check=True, capture_output=True, text=True).stdout


# summary: its own section, not "no operations"
s = run('summary')
assert 'no collective or point-to-point operations' not in s, s
assert 'copy-engine (CE) collectives' in s, s
for f in batches:
    row = [l for l in s.splitlines() if re.match(r'\s+\S+\s+%s\s' % f, l)]
    assert len(row) == 1 and re.search(r'\s%d\s' % per_func, row[0]), (f, row)

# summary --json: counts and the CeColl/CeSync/CeBatch timings
j = json.loads(run('summary', '--json'))
rows = {r['func']: r for r in j['ce_collectives']}
assert set(rows) == set(batches), rows.keys()
for f, b in batches.items():
    r = rows[f]
    assert r['count'] == per_func, (f, r['count'])
    assert r['ce_coll']['n'] == per_func and r['ce_coll']['avg_ns'] > 0, r
    assert r['ce_sync']['n'] == 2 * per_func, r
    assert r['ce_batch']['n'] == b * per_func, r
    assert r['enqueue']['n'] == per_func and r['enqueue']['avg_ns'] >= r['ce_coll']['avg_ns'], r
    assert r['ce_coll']['avg_ns'] >= r['ce_batch']['avg_ns'], r  # the batches happen inside the CeColl
    assert r['sync_strategy'] in ('MC', 'UC'), r

# report: a section with a row per function
rep = run('report')
sec = rep.split('## Copy-engine (CE) collectives', 1)
assert len(sec) == 2, 'no CE section in the report'
body = sec[1].split('\n## ', 1)[0]
assert sum(1 for l in body.splitlines() if l.startswith('| ') and l.split('|')[2].strip() in batches) == 4, body

# export: the CE collectives counted in its summary line
out = subprocess.run([cli, 'export', *traces, '-o', d + '/x.json'], check=True, capture_output=True,
                     text=True).stdout
assert '%d copy-engine (CE) collectives' % total in out, out

# job view: said, and in its JSON
jt = run('job')
assert '%d copy-engine (CE) collectives' % total in jt, jt
jj = json.loads(run('job', '--json'))
assert jj['ce_collectives']['count'] == total and jj['ce_collectives']['host_enqueue_ns'] > 0, jj['ce_collectives']

# live metrics (agent): a counter family of their own, and their series labelled algo="CE"
t = open(prom).read()
got = {}
for labels, v in re.findall(r'^nccl_lens_ce_collectives_total\{(.*)\} (\S+)$', t, re.M):
    f = dict(re.findall(r'(\w+)="([^"]*)"', labels))['function']
    got[f] = got.get(f, 0) + int(float(v))
assert got == {f: per_func for f in batches}, got
ce_ops = sum(int(float(v)) for v in re.findall(r'^nccl_lens_ops_total\{.*algo="CE".*\} (\S+)$', t, re.M))
assert ce_ops == total, ce_ops
n = sum(int(float(v)) for v in re.findall(r'^nccl_lens_enqueue_time_seconds_count\{.*algo="CE".*\} (\S+)$', t, re.M))
assert n == total, n
assert not re.search(r'^nccl_lens_kernel_span_seconds_count\{.*algo="CE"', t, re.M), 'CE has no GPU span'
assert not re.search(r'^nccl_lens_collectives_total\{', t, re.M), 'CE counted as kernel collectives'
print('ce: %d CE collectives in summary, report, export, job and the agent' % total)
