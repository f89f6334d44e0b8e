# Checks a Chrome Trace Event JSON document from `nccl-lens export` the way
# Perfetto reads it, and prints one "key value" line per figure:
#   x_violations     complete ("X") slices on one track (pid, tid) that overlap
#                    without nesting (times compared exactly, in integer ns)
#   async_violations "b"/"e" pairs of one process-scoped id that do not nest
#                    (stable sort by ts, an "e" must close the innermost open
#                    "b" of the same name), or that are left open
#   tracks           declared thread tracks; empty_tracks: declared with no
#                    slice; unnamed_tracks: slices on an undeclared track
#   dup_tracks       a (pid, tid) declared twice
#   unranked_tracks  declared tracks whose name has no rank ("r3", "r0-7")
#   unranked_procs   process names without "rank"
#   id_collisions    a tid number used in two processes, or equal to a
#                    process's pid; small_pids: pids below the synthetic base
#   count PH/CAT     complete slices and async begins per category
import json, re, sys
from decimal import Decimal
from collections import defaultdict

BASE = 4194304
d = json.load(open(sys.argv[1]), parse_float=Decimal)
ev = d['traceEvents']


def ns(v):
    return int(Decimal(v) * 1000)


cats = defaultdict(int)
xs = defaultdict(list)
asy = defaultdict(list)
names = {}
dup = 0
procs = {}
for i, e in enumerate(ev):
    ph = e['ph']
    if ph in 'Xb':
        cats[ph + '/' + e.get('cat', '')] += 1
    if ph == 'X':
        s = ns(e['ts'])
        xs[(e['pid'], e['tid'])].append((s, s + ns(e.get('dur', 0))))
    elif ph in 'be':
        asy[(e['pid'], e['id2']['local'] if 'id2' in e else e.get('id'))].append((ns(e['ts']), i, ph, e['name']))
    elif ph == 'M' and e['name'] == 'thread_name':
        k = (e['pid'], e['tid'])
        if k in names:
            dup += 1
        names[k] = e['args']['name']
    elif ph == 'M' and e['name'] == 'process_name':
        procs[e['pid']] = e['args']['name']

xv = 0
first = ''
for k, v in xs.items():
    v.sort(key=lambda t: (t[0], -t[1]))
    stack = []
    for s, t in v:
        while stack and stack[-1] <= s:
            stack.pop()
        if stack and t > stack[-1]:
            xv += 1
            if not first:
                first = '%s [%d,%d] in one ending %d (%s)' % (k, s, t, stack[-1], names.get(k))
            continue
        stack.append(t)

av = 0
for k, v in asy.items():
    v.sort(key=lambda t: (t[0], t[1]))
    stack = []
    for ts, _, ph, name in v:
        if ph == 'b':
            stack.append(name)
        elif not stack or stack[-1] != name:
            av += 1
        else:
            stack.pop()
    av += len(stack)

empty = sum(1 for k in names if k not in xs)
unnamed = sum(1 for k in xs if k not in names)
rank_re = re.compile(r'(^|\s)r\d')
unranked = sum(1 for n in names.values() if not rank_re.search(n))
unranked_procs = sum(1 for n in procs.values() if 'rank' not in n)
pids = set(k[0] for k in list(xs) + list(names)) | set(procs)
tid_pids = defaultdict(set)
for k in list(xs) + list(names):
    tid_pids[k[1]].add(k[0])
coll = sum(1 for t, p in tid_pids.items() if len(p) > 1 or (t in pids and t not in p))
small_pids = sum(1 for p in pids if p < BASE)
print('x_slices', sum(len(v) for v in xs.values()))
print('x_violations', xv)
print('async_pairs', sum(len(v) for v in asy.values()) // 2)
print('async_violations', av)
print('tracks', len(names))
print('empty_tracks', empty)
print('unnamed_tracks', unnamed)
print('dup_tracks', dup)
print('unranked_tracks', unranked)
print('procs', len(procs))
print('unranked_procs', unranked_procs)
print('id_collisions', coll)
print('small_pids', small_pids)
print('lanes', sum(1 for n in names.values() if ' · lane ' in n))
for k in sorted(cats):
    print('count', k, cats[k])
if first:
    print('first_violation', first)
for p in sorted(procs)[:4]:
    print('process', procs[p])
for k in sorted(names)[:12]:
    print('track', names[k])
