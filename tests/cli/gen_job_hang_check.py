#!/usr/bin/env python3
"""test_gen_job_hang: a hang at the scale of the job. lens-gen-job --hang-rank R
writes a job whose rank R never calls the last instance while every other rank
waits in it (its kernel's channels and first proxy steps never end) and no
process ends; truth.json names the rank and the seq. Every view says the same
of it, and says it as the truth has it:
  - `hang --json` exits 3: the communicator stuck at that seq, rank R the one
    missing rank, the other ranks entered and stuck (last started = seq, last
    completed = seq - 1), a send and a receive waiting at step 0 on each of
    them, and each of their channels' kernels started, never stopped;
  - `job --json`'s hang block names the same communicator, seq and missing
    rank; the instance is matched on some ranks, not decomposed (no span on
    any rank: no execution, no last rank), and no other instance is named
    partial;
  - job's text says the instance was not decomposed because no rank
    completed it, never that host spans timed it;
  - `report --json`'s hang verdict is "bad" and names rank R, and its ops in
    flight come in the text's groups (a row per direction, step and state,
    the ranks as ranges), which the page draws past 16 ops.
On 256 ranks on 32 hosts and 1,024 ranks on 128 hosts (the users' case).
usage: gen_job_hang_check.py NCCL_LENS_BIN LENS_GEN_JOB_BIN"""
import json
import shutil
import subprocess
import sys
import tempfile

lens, gen = sys.argv[1], sys.argv[2]
fails = []


def fail(msg):
    fails.append(msg)
    print('FAIL: ' + msg)


def run(args, ok=(0,)):
    p = subprocess.run(args, capture_output=True, text=True, timeout=600)
    if p.returncode not in ok:
        fail('%s exited %d: %s' % (' '.join(args[:3]), p.returncode, p.stderr[-400:]))
    return p


tmp = tempfile.mkdtemp(prefix='lens-genhang-')
try:
    for ranks, hosts, events, hang in ((256, 32, 150000, 201), (1024, 128, 300000, 777)):
        d = '%s/job%d' % (tmp, ranks)
        run([gen, '-o', d, '--ranks', str(ranks), '--hosts', str(hosts), '--events', str(events),
             '--hang-rank', str(hang)])
        truth = json.load(open(d + '/truth.json'))
        seq = truth['hang']['seq']
        if truth['hang']['rank'] != hang or truth['hang']['missing'] != [hang] or seq != truth['instances']:
            fail('%d: truth.json hang %s' % (ranks, truth['hang']))
        others = [r for r in range(ranks) if r != hang]

        h = json.loads(run([lens, 'hang', '--json', d], ok=(3,)).stdout)
        cs = [c for c in h['communicators'] if c['stuck']]
        if len(cs) != 1:
            fail('%d: %d stuck communicators' % (ranks, len(cs)))
            continue
        c = cs[0]
        if c['stuck_seq'] != seq or c['stuck_func'] != 'AllReduce' or c['missing_ranks'] != [hang] or \
                c['untraced_ranks']:
            fail('%d: hang stuck at %s %s, missing %s, untraced %s (truth seq %d, rank %d)' % (
                ranks, c['stuck_func'], c['stuck_seq'], c['missing_ranks'], c['untraced_ranks'], seq, hang))
        rows = {x['rank']: x for x in c['ranks']}
        bad = [r for r in others if not (rows.get(r, {}).get('entered') and rows[r].get('stuck') and
                                         rows[r]['last_started'].get('AllReduce') == seq and
                                         rows[r]['last_completed'].get('AllReduce') == seq - 1)]
        if bad or rows.get(hang, {}).get('entered') or rows.get(hang, {}).get('last_started', {}).get('AllReduce') \
                != seq - 1:
            fail('%d: ranks not stuck as written: %s...; the missing one %s' % (ranks, bad[:5], rows.get(hang)))
        sends = {w['rank'] for w in c['waiting'] if w['is_send'] and w['step'] == 0 and w['state'] == 'SendGPUWait'}
        recvs = {w['rank'] for w in c['waiting'] if not w['is_send'] and w['step'] == 0 and w['state'] == 'RecvWait'}
        kch = {(k['rank'], k['channel']) for k in c['kernel_channels']}
        if sends != set(others) or recvs != set(others):
            fail('%d: waiting sends on %d ranks, receives on %d, want %d' % (ranks, len(sends), len(recvs),
                                                                            len(others)))
        if kch != {(r, ch) for r in others for ch in range(truth['channels'])}:
            fail('%d: %d kernel channels never stopped, want %d' % (ranks, len(kch), len(others) * truth['channels']))

        j = json.loads(run([lens, 'job', '--json', d]).stdout)
        jh = [x for x in j['hang']['communicators']] if j.get('hang') else []
        if len(jh) != 1 or jh[0]['seq'] != seq or jh[0]['missing_ranks'] != [hang] or \
                jh[0]['stuck_ranks'] != len(others):
            fail('%d: job --json hang %s' % (ranks, jh))
        last = [x for x in j['collectives'] if x['seq'] == seq]
        if len(last) != 1 or last[0]['exec_ns'] is not None or last[0]['last_rank'] is not None or \
                'no_span' not in last[0]['flags'] or last[0]['ranks_seen'] != len(others):
            fail('%d: the hung instance in job --json: %s' % (
                ranks, [{k: v for k, v in x.items() if k != 'ranks'} for x in last]))
        partial = [x['seq'] for x in j['collectives'] if 'partial' in x['flags'] and x['seq'] != seq]
        if partial:
            fail('%d: other instances partial: %s' % (ranks, partial[:5]))
        text = run([lens, 'job', d]).stdout
        if 'no rank completed them' not in text or 'host-side spans' in text:
            fail('%d: job text does not say the hung instance was not completed:\n%s' % (ranks, text[:600]))

        rj = json.loads(run([lens, 'report', '--json', d]).stdout)
        v = [x for x in rj['verdict'] if x['key'] == 'hang']
        if not v or v[0]['status'] != 'bad' or ('rank %d' % hang) not in v[0]['text']:
            fail('%d: report hang verdict %s' % (ranks, v))
        # the page's rows of ops in flight: hang's text groups, every op in one
        rc = rj['hang']['comms'][0] if rj['hang'] else {}
        want_ranks = '0-%d,%d-%d' % (hang - 1, hang + 1, ranks - 1)
        groups = sorted((g['send'], g['step'], g['ops'], g['n_ranks'], g['ranks']) for g in rc.get('waiting_groups', []))
        if groups != [(False, 0, len(others), len(others), want_ranks), (True, 0, len(others), len(others), want_ranks)] \
                or rc.get('waiting_total') != 2 * len(others):
            fail('%d: report waiting groups %s of %s' % (ranks, groups, rc.get('waiting_total')))
        if '%d receives in flight at step 0, RecvWait, on %d ranks: %s' % (len(others), len(others), want_ranks) \
                not in run([lens, 'hang', d], ok=(3,)).stdout:
            fail('%d: hang text does not group the receives as the page does' % ranks)
finally:
    shutil.rmtree(tmp, ignore_errors=True)
print('test_gen_job_hang: %s' % ('FAILED' if fails else 'the hung job named alike by hang, job and report'))
sys.exit(1 if fails else 0)
