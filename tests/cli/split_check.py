# Checks `nccl-lens export --split` pieces against the whole document, and
# prints one "key value" line per figure:
#   pieces       files given after the whole one
#   over_limit   pieces bigger than the limit (bytes)
#   invalid      pieces that are not one JSON document with traceEvents
#   missing      events (not metadata) of the whole in no piece
#   extra        events in the pieces beyond the whole's (an event twice)
#   split_ok     pieces whose otherData.split says piece k of N, in order
# usage: split_check.py LIMIT WHOLE.json PIECE.json...
import json, os, sys
from collections import Counter

limit = int(sys.argv[1])
whole = json.load(open(sys.argv[2]))


def key(e):
    return json.dumps(e, sort_keys=True)


want = Counter(key(e) for e in whole['traceEvents'] if e['ph'] != 'M')
got = Counter()
over = invalid = split_ok = 0
pieces = sys.argv[3:]
for k, p in enumerate(pieces):
    if os.path.getsize(p) > limit:
        over += 1
    try:
        d = json.load(open(p))
        ev = d['traceEvents']
    except Exception:
        invalid += 1
        continue
    s = d.get('otherData', {}).get('split', {})
    if s.get('piece') == k + 1 and s.get('pieces') == len(pieces):
        split_ok += 1
    got.update(key(e) for e in ev if e['ph'] != 'M')
print('pieces', len(pieces))
print('over_limit', over)
print('invalid', invalid)
print('events', sum(want.values()))
print('missing', sum((want - got).values()))
print('extra', sum((got - want).values()))
print('split_ok', split_ok)
