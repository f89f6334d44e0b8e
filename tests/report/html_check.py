#!/usr/bin/env python3
# test_report_html: `nccl-lens report --html` of replayed jobs (a straggler,
# a slow link seen by the network view, a slow link seen by the job view, a
# hang, mixed collectives) and of lens-gen-job's 1,024 ranks, rendered in
# headless Chromium. The page writes what it drew into
# <pre id="lens-check"> (tools/report/assets/report.js); this reads it back
# with --dump-dom and asserts:
#   - the page names no server (no http(s) URL but the XML namespace names
#     d3 carries, no src/href to anything), sets the CSP that makes any
#     request fail, embeds 4 scripts and no more, and is under 10 MB;
#   - no error was caught (window errors, CSP violations), every plot it
#     started was drawn, every SVG holds marks and every canvas pixels;
#   - what makes a plot read (its colour key's ends = the data's extremes, the
#     slow links outlined, axis titles clear of tick labels, a shape per curve,
#     an empty plot saying why), and the 1,024-rank page under 1 MiB;
#   - the numbers each plot carries equal `report --json`'s, and those equal
#     the other commands' (job --json, net --json, validate --json, hang's
#     exit status); the verdict agrees with them;
#   - the export command named for a straggler's instance shows that
#     instance (its "(last rank)" slice is in the window); the Markdown
#     report's hints put a hang first and name each straggler's seq, rank
#     and export window;
#   - as root (unshare): a host name with markup shows as text; without d3,
#     --html exits 1 with one line and writes no page;
#   - a screenshot (1400x3000) of each page is written; with LENS_HTML_SHOTS=DIR
#     they go there (docs/img/ holds the ones docs/report.md shows).
# Exits 77 (ctest: skipped) only when Chromium is not installed.
# Usage: html_check.py BUILD_DIR
import collections, html, json, math, os, re, shutil, subprocess, sys, tempfile

build = sys.argv[1]
lens = os.path.join(build, 'bin', 'nccl-lens')
chromium = shutil.which('chromium') or shutil.which('chromium-browser')
if not chromium:
    print('SKIP: chromium is not installed (scripts/setup.sh installs it)')
    sys.exit(77)
shots = os.environ.get('LENS_HTML_SHOTS')
tmp = tempfile.mkdtemp(prefix='lens-html-')
fails = []


def fail(msg):
    fails.append(msg)
    print('FAIL: ' + msg)


def run(args, ok=(0,), **kw):
    p = subprocess.run(args, capture_output=True, text=True, timeout=240, **kw)
    if p.returncode not in ok:
        raise SystemExit('%s: exit %d\n%s' % (' '.join(args), p.returncode, p.stderr))
    return p


def close(a, b, rel=1e-4):
    return abs(a - b) <= rel * max(abs(a), abs(b), 1e-9)


def chrome(page, *extra):
    prof = tempfile.mkdtemp(dir=tmp, prefix='profile-')
    return run([chromium, '--headless', '--no-sandbox', '--disable-gpu', '--hide-scrollbars', '--no-first-run',
                '--user-data-dir=' + prof, '--virtual-time-budget=10000'] + list(extra) + [page])


def page_check(dom):
    """The page's own check (report.js's <pre id="lens-check">) from a --dump-dom, or None if it did not finish."""
    m = re.search(r'<pre id="lens-check"[^>]*data-done="1"[^>]*>(.*?)</pre>', dom, re.S)
    return json.loads(html.unescape(m.group(1))) if m else None


def shrink_png(path):
    """The docs' copy of a screenshot, small: 4 bits a channel (0 and 255 kept), the rows of background at the
    bottom cut, deflated at level 9. Reads the 8-bit RGB(A) non-interlaced PNG Chromium writes."""
    import struct, zlib
    b = open(path, 'rb').read()
    i, idat, hdr = 8, b'', None
    while i < len(b):
        n, = struct.unpack('>I', b[i:i + 4])
        t, d = b[i + 4:i + 8], b[i + 8:i + 8 + n]
        i += 12 + n
        if t == b'IHDR':
            hdr = struct.unpack('>IIBBBBB', d)
        elif t == b'IDAT':
            idat += d
    w, h, depth, ctype, _, _, interlace = hdr
    if depth != 8 or interlace or ctype not in (2, 6):
        return
    bpp = 3 if ctype == 2 else 4
    raw, stride, rows, prev = zlib.decompress(idat), w * bpp, [], bytearray(w * bpp)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            c = prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + prev[x]) & 255
            elif f == 3:
                line[x] = (line[x] + (a + prev[x]) // 2) & 255
            elif f == 4:
                p = a + prev[x] - c
                pa, pb, pc = abs(p - a), abs(p - prev[x]), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else prev[x] if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    n = len(rows)
    while n > 1 and rows[n - 1] == rows[-1]:
        n -= 1
    q = bytes(round(v / 17) * 17 for v in range(256))
    body = b''.join(b'\0' + r.translate(q) for r in rows[:min(len(rows), n + 24)])

    def chunk(t, d):
        return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d) & 0xffffffff)
    hdr = struct.pack('>IIBBBBB', w, min(len(rows), n + 24), 8, ctype, 0, 0, 0)
    open(path, 'wb').write(b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', hdr) + chunk(b'IDAT', zlib.compress(body, 9)) +
                           chunk(b'IEND', b''))


# scenario, replay options, the verdict lines that must be "bad", plots that must be drawn
SCEN = [
    ('job-late-app', [], {'stragglers'}, {'waits', 'stragglers', 'busbw', 'lag', 'clock_maps', 'flags'}),
    ('net-slow-link', ['--nodes', '2', '--ranks-per-node', '2'], {'link'},
     {'net_matrix', 'net_slowest', 'net_split', 'lag', 'clock_maps', 'flags'}),
    ('job-slow-link', ['--nodes', '2', '--ranks-per-node', '2', '--iters', '6', '--delay-us', '20000'], {'link'},
     {'busbw', 'net_matrix', 'net_slowest', 'net_split'}),
    ('hang-missing', [], {'hang'}, {'hang_0', 'stragglers'}),
    # a frozen proxy: its rank's square framed, the one the verdict names
    ('hang-proxy', ['--nodes', '2', '--ranks-per-node', '2'], {'hang'}, {'hang_0'}),
    # five curves, two of them on one point (AllReduce 8 KiB on two communicators); a connection with no step timed
    ('mixed', [], set(), {'busbw', 'waits', 'lag'}),
    # flagged channels: stragglers on host spans, whose cause the page says as the text does ("host spans")
    ('overrun', [], {'stragglers'}, {'stragglers', 'flags'}),
    # the generator's 1,024-rank job (opts None: lens-gen-job, not a replay): rows grouped and labels thinned,
    # the widest 48 of its 2,048 clock maps, the page under 1 MB
    ('gen-1024', None, set(), {'waits', 'stragglers', 'busbw', 'net_slowest', 'net_split', 'clock_maps'}),
]

ALLOWED_URLS = {'http://www.w3.org/1999/xhtml', 'http://www.w3.org/1999/xlink', 'http://www.w3.org/2000/svg',
                'http://www.w3.org/2000/xmlns/', 'http://www.w3.org/XML/1998/namespace'}

# The golden test's committed traces of these scenarios when at hand (tests/golden/traces: the same
# replay, recorded once): what a scenario injects then shows whatever the machine's load, where a live
# replay on a loaded machine can blur a slow link into the jitter. Else a replay here.
GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'golden', 'traces')

for name, opts, bad, plots in SCEN:
    d = os.path.join(tmp, name)
    if opts is None:
        run([os.path.join(build, 'bin', 'lens-gen-job'), '-o', d, '--events', '300000'])
    elif os.path.isdir(os.path.join(GOLDEN, name)):
        shutil.copytree(os.path.join(GOLDEN, name), d)
    else:
        os.mkdir(d)
        run([lens, 'replay', '--scenario', name, '--out', d, '--quiet'] + opts, ok=(0,))
    J = json.loads(run([lens, 'report', '--json', d]).stdout)
    page = os.path.join(tmp, name + '.html')
    run([lens, 'report', '--html', '-o', page, d])
    text = open(page, encoding='utf-8').read()

    # ---- the file itself ----
    if os.path.getsize(page) > 10 << 20:
        fail('%s: page over 10 MB' % name)
    if opts is None and os.path.getsize(page) > 1 << 20:
        fail('%s: the 1,024-rank page is %d bytes, over 1 MiB' % (name, os.path.getsize(page)))
    urls = set(re.findall(r'https?://[^\s"\'<>)\\]*', text)) - ALLOWED_URLS
    if urls:
        fail('%s: URLs in the page: %s' % (name, sorted(urls)[:5]))
    if re.search(r'<(script|img|link|iframe|object|embed|source)\b[^>]*\b(src|href|data)\s*=', text, re.I):
        fail('%s: an element loads something' % name)
    if "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:" not in text:
        fail('%s: no CSP' % name)
    if text.lower().count('</script') != 4:
        fail('%s: %d </script, want 4 (onerror, data, d3, page)' % (name, text.lower().count('</script')))

    # ---- the page in Chromium ----
    dom = chrome(page, '--dump-dom').stdout
    C = page_check(dom)
    if C is None:
        fail('%s: the page did not finish drawing (no lens-check)' % name)
        continue
    print('%s: %d plots drawn of %d, %d svg, %d canvas, skipped %s' % (
        name, C['plots_drawn'], C['plots_expected'], C['svg_nonempty'], C['canvas_nonempty'], sorted(C['skipped'])))
    if C['errors']:
        fail('%s: errors in the page: %s' % (name, C['errors']))
    if C['plots_drawn'] != C['plots_expected']:
        fail('%s: plots not drawn: %s' % (name, [k for k, v in C['plots'].items() if not v.get('drawn')]))
    missing = plots - {k for k, v in C['plots'].items() if v.get('drawn')}
    if missing:
        fail('%s: expected plots missing: %s' % (name, sorted(missing)))
    if C['too_wide']:
        fail('%s: plots wider than the window: %s' % (name, C['too_wide']))
    if 'waits' in plots or 'net_matrix' in plots:  # the canvas plots on a narrow window: drawn at its width
        N = page_check(chrome(page, '--window-size=500,2000', '--dump-dom').stdout) or \
            {'too_wide': ['the page did not finish drawing'], 'errors': []}
        if N['too_wide'] or N['errors']:
            fail('%s: at 500 px (the narrowest Chromium draws): too wide %s, errors %s' % (name, N['too_wide'], N['errors']))
        if N.get('page_width', [1, 0])[0] > N.get('page_width', [1, 0])[1]:
            fail('%s: at 500 px the page is %s px wide: it scrolls sideways' % (name, N.get('page_width')))
    if name == 'overrun' and 'late or busy GPU / host spans' not in dom:
        fail('%s: the stragglers\' legend does not say grey is also host spans' % name)
    svgs = dom.count('<svg')
    if C['svg_nonempty'] != svgs:
        fail('%s: %d of %d svg hold marks' % (name, C['svg_nonempty'], svgs))
    if C['canvas_nonempty'] != dom.count('<canvas'):
        fail('%s: %d of %d canvas drawn' % (name, C['canvas_nonempty'], dom.count('<canvas')))
    want_v = ['%s:%s' % (v['key'], v['status']) for v in J['verdict']]
    if C['verdict'] != want_v:
        fail('%s: verdict drawn %s, JSON %s' % (name, C['verdict'], want_v))
    for v in J['verdict']:
        # hang and link are what the scenario made; a straggler can come from a loaded machine's jitter
        # (the job view's own word, checked against job --json below)
        if v['key'] in bad and v['status'] != 'bad' or v['key'] in ('hang', 'link') and v['key'] not in bad and \
                v['status'] == 'bad':
            fail('%s: verdict %s is %s: %s' % (name, v['key'], v['status'], v['text']))
        if 'id="%s"' % v['section'] not in dom:
            fail('%s: verdict links to a missing section %s' % (name, v['section']))
        # a communicator is named as every view names it (its name, else "comm 0x..."), never "?"; one
        # connection is not "all 1 connections"
        if ' of ?' in v['text'] or 'all 1 connections' in v['text']:
            fail('%s: verdict %s says %r' % (name, v['key'], v['text']))

    # ---- the numbers each plot carries = report --json's ----
    P = {k: v for k, v in C['plots'].items()}
    if 'busbw' in P:
        want = [[p['bytes'], p['busbw']] for s in J['busbw']['series'] for p in s['points']]
        if P['busbw']['values'] != want:
            fail('%s: busbw plot %s != JSON %s' % (name, P['busbw']['values'], want))
    if 'waits' in P:
        rows = J['waits']['rows']
        tot = sum(sum(r) for r in rows)
        nz = sum(1 for r in rows for v in r if v > 0)
        got = P['waits']['values']
        if not close(got['total_us'], tot) or not close(got['total_us'], J['waits']['total_us']) or got['nonzero'] != nz:
            fail('%s: heatmap %s != JSON total %s nonzero %d' % (name, got, tot, nz))
    if 'busbw' in P:
        sh = P['busbw']['shapes']
        if P['busbw']['points_drawn'] != len(P['busbw']['values']) or len(set(sh[:6])) != len(sh[:6]):
            fail('%s: busbw points drawn %d of %d, shapes %s' % (name, P['busbw']['points_drawn'],
                                                                 len(P['busbw']['values']), sh))
    if 'stragglers' in P:
        want = [s['wait_caused_us'] for s in J['stragglers']['list'][:20]]
        if P['stragglers']['values'] != want:
            fail('%s: stragglers plot %s != JSON %s' % (name, P['stragglers']['values'], want))
    if 'net_matrix' in P:
        cells = J['net']['matrix']['cells']
        got = P['net_matrix']['values']
        if got['cells'] != len(cells) or not close(got['gbps_sum'], sum(c[2] for c in cells)):
            fail('%s: matrix %s != JSON %d cells' % (name, got, len(cells)))
    timed = [c for c in (J['net'] or {}).get('slowest', []) if c['steps'] > 0]  # the bars: connections with steps
    if 'net_slowest' in P and P['net_slowest']['values'] != [c['score'] for c in timed]:
        fail('%s: slowest links plot != JSON' % name)
    if 'net_slowest' in P and P['net_slowest']['colours'] != [
            'slow' if c['slow_link'] else 'pace' if c['stands_out'] else 'typical' for c in timed]:
        fail('%s: slowest links coloured %s' % (name, P['net_slowest']['colours']))
    if 'net_split' in P:
        want = [sum(c['split_us']) for c in timed]
        if any(not close(a, b) for a, b in zip(P['net_split']['values'], want)) or len(want) != len(
                P['net_split']['values']):
            fail('%s: step split plot != JSON' % name)
    # ---- what the page shows reads: keys, labels clear of each other, an empty plot says why ----
    if 'waits' in P:
        mx = max((v for r in J['waits']['rows'] for v in r), default=0)
        span = J['waits']['n_bins'] * J['waits']['bin_s']
        if not close(P['waits']['key_us'][2], mx) or P['waits']['time_unit'] != ('ms' if span < 1 else 's'):
            fail('%s: heatmap key %s / unit %s, darkest cell %s us over %s s' % (
                name, P['waits']['key_us'], P['waits']['time_unit'], mx, span))
    if 'net_matrix' in P:
        M = J['net']['matrix']
        g = M['rank_group']
        # red: the slow links (net --json's slow, the verdict's rule); amber: standing out by pace alone
        net = json.loads(run([lens, 'net', '--json', d]).stdout)
        slow = {(c['src'], c['dst'], c['channel']) for c in net['connections'] if c.get('slow')}
        if {(l['src'], l['dst'], l['channel']) for l in J['net']['slowest'] if l['slow_link']} != \
                {(l['src'], l['dst'], l['channel']) for l in J['net']['slowest']} & slow:
            fail('%s: slowest connections\' slow_link != net --json slow' % name)
        cell = lambda l: '%d,%d' % (l['src'] // g, l['dst'] // g)
        mine = [l for l in J['net']['slowest'] if l['stands_out'] and l['comm_id'] == M['comm_id']]
        want = sorted({cell(l) for l in mine if l['slow_link']})
        pace = sorted({cell(l) for l in mine if not l['slow_link']} - set(want))
        if P['net_matrix']['outlined'] != want or P['net_matrix']['outlined_pace'] != pace:
            fail('%s: matrix outlines %s / %s, slow links %s, by pace %s' % (
                name, P['net_matrix']['outlined'], P['net_matrix']['outlined_pace'], want, pace))
        if name == 'net-slow-link' and not want:  # the scenario's slow link, on the network
            fail('%s: the slow link is not outlined in the matrix' % name)
        pos = [c[2] for c in M['cells'] if c[2] > 0]
        logc = bool(pos) and max(pos) / min(pos) > 20
        if P['net_matrix']['scale'] != ('log' if logc else 'linear') or not close(P['net_matrix']['key_gbps'][2], max(
                c[2] for c in M['cells'])) or (logc and not close(P['net_matrix']['key_gbps'][0], min(pos))):
            fail('%s: matrix colour key %s %s' % (name, P['net_matrix']['scale'], P['net_matrix']['key_gbps']))
    if 'net_split' in P:
        want = [ph for k, ph in enumerate(J['net']['phases']) if any(c['split_us'][k] > 0 for c in timed)]
        if P['net_split']['legend'] != want:
            fail('%s: step split legend %s, phases with time %s' % (name, P['net_split']['legend'], want))
    for k in ('lag', 'clock_maps'):
        if k in P and not P[k].get('label_clear'):
            fail('%s: %s x label overlaps its tick labels' % (name, k))
    if 'clock_maps' in P and P['clock_maps']['tick_labels'] != P['clock_maps']['marks']:
        fail('%s: %d clock map bars, %d named' % (name, P['clock_maps']['marks'], P['clock_maps']['tick_labels']))
    G = J['gpu']
    if len(G['clock_maps']) > 48 or G['clock_maps_total'] < len(G['clock_maps']) or (
            G['clock_maps_total'] > len(G['clock_maps']) and len(G['clock_maps']) != 48):
        fail('%s: %d clock maps written of %d (the widest 48)' % (name, len(G['clock_maps']), G['clock_maps_total']))
    if not J['busbw']['series']:
        lo = J['busbw']['left_out']
        why = C['skipped'].get('busbw', '')
        if any(lo[k] and ('{:,} {}'.format(lo[k], w)) not in why for k, w in (
                ('p2p', 'point-to-point'), ('partial', 'partial'), ('undecomposed', 'instance'))):
            fail('%s: empty busbw plot says %r, left out %s' % (name, why, lo))

    if 'lag' in P and P['lag']['values'] != J['threads']['lag']['counts']:
        fail('%s: lag plot != JSON' % name)
    if 'lag' in P and sum(J['threads']['lag']['counts']) != J['threads']['lag']['n']:
        fail('%s: lag bins do not add up to the KernelCh counted' % name)
    if 'clock_maps' in P:
        want = sorted((c['bound_us'] for c in J['gpu']['clock_maps']), reverse=True)[:48]
        if P['clock_maps']['values'] != want:
            fail('%s: clock map plot != JSON' % name)
    if 'flags' in P and P['flags']['values'] != [x['events'] for x in J['gpu']['flags']]:
        fail('%s: flags plot != JSON' % name)
    for i, hc in enumerate((J['hang'] or {}).get('comms', [])):
        fz = sorted({z['rank'] for z in J['hang']['frozen'] if 0 <= z['rank'] < hc['nranks']})
        if P.get('hang_%d' % i, {}).get('frozen') != fz:
            fail('%s: hang plot frames %s, frozen proxies of ranks %s' % (name, P.get('hang_%d' % i, {}).get('frozen'), fz))
        hv = [v['text'] for v in J['verdict'] if v['key'] == 'hang'][0]
        if name == 'hang-proxy' and (not fz or any('frozen proxy of rank %d' % r not in hv for r in fz)):
            fail('%s: frozen ranks %s, the verdict says %r' % (name, fz, hv))
        want = collections.Counter(r[0] for r in hc['ranks'])
        got = P.get('hang_%d' % i, {}).get('values', {})
        if any(got.get(k, 0) != want.get(k, 0) for k in ('stuck', 'missing', 'untraced', 'passed')):
            fail('%s: hang plot %s != JSON %s' % (name, got, dict(want)))

    # ---- report --json = the other commands ----
    hang_rc = subprocess.run([lens, 'hang', d], capture_output=True, timeout=240).returncode
    if (hang_rc == 3) != (J['hang'] is not None):
        fail('%s: hang exits %d, report hang %s' % (name, hang_rc, J['hang'] is not None))
    job = json.loads(run([lens, 'job', '--json', d]).stdout)
    got = [(s['rank'], s['wait_caused_us'], s['times_last']) for s in J['stragglers']['list']]
    want = [(s['rank'], round(s['wait_caused_ns'] / 1e3, 6), s['times_last']) for s in job['stragglers']][:50]
    if len(got) != len(want) or any(a[0] != b[0] or a[2] != b[2] or not close(a[1], b[1]) for a, b in zip(got, want)):
        fail('%s: stragglers %s != job --json %s' % (name, got, want))
    # one name for a cause: an instance's words and a straggler's causes as the text says them (an unknown
    # cause on host spans is "host spans", on GPU spans "late or busy GPU"), from job --json's keys and flags
    def words_of(c):
        if c['cause'] == 'unknown':
            return 'host spans' if 'host_spans' in c['flags'] else 'late or busy GPU'
        return J['stragglers']['cause_words'].get(c['cause'])
    by_seq = collections.defaultdict(list)  # a seq recurs (graph replays, split communicators)
    for c in job['collectives']:
        by_seq[(c['comm_id'], c['seq'], c['func'], c['bytes'], c['last_rank'])].append(c)
    for s in J['stragglers']['list']:
        for n in s['instances']:
            cands = by_seq[(s['comm_id'], n['seq'], n['func'], n['bytes'], s['rank'])]
            if not any(n['cause'] == c['cause'] and n['cause_words'] == words_of(c) for c in cands):
                fail('%s: instance %s cause %r %r, job --json %s' % (name, n['seq'], n['cause'], n['cause_words'],
                                                                   [(c['cause'], c['flags']) for c in cands]))
        if name == 'overrun' and s is J['stragglers']['list'][0] and \
                not any(n['cause_words'] == 'host spans' for n in s['instances']):
            fail('%s: the first straggler has no instance on host spans: %s' % (name, s['causes_text']))
        if len(s['instances']) == s['times_last']:
            words = collections.Counter(n['cause_words'] for n in s['instances'])
            if sorted(s['causes_text'].split(', ')) != sorted('%s %d' % kv for kv in words.items()):
                fail('%s: rank %d causes %r, its instances %s' % (name, s['rank'], s['causes_text'], dict(words)))
            if s['host_spans'] != words[J['stragglers']['host_spans_words']]:
                fail('%s: rank %d host_spans %d, its instances %s' % (name, s['rank'], s['host_spans'], dict(words)))
    links = collections.Counter((c['cause_rank'], c['cause_peer']) for c in job['collectives'] if c['cause'] == 'slow_link')
    if {(l['src'], l['dst']): l['instances'] for l in (J['net'] or {}).get('job_slow_links', [])} != dict(links):
        fail('%s: job slow links != job --json %s' % (name, dict(links)))
    for s in J['busbw']['series']:
        for p in s['points']:
            bw = [c['busbw_gbps'] for c in job['collectives'] if c['comm_id'] == s['comm_id'] and c['func'] == s['func']
                  and c['bytes'] == p['bytes'] and c['exec_ns'] and 'partial' not in c['flags']]
            if len(bw) != p['count'] or not close(min(bw), p['min']) or not close(max(bw), p['max']):
                fail('%s: busbw point %s != job --json %s' % (name, p, bw))
    if J['net']:
        net = json.loads(run([lens, 'net', '--json', d]).stdout)
        out = sum(1 for c in net['connections'] if c['stands_out'])
        if out != J['net']['standing_out'] or len(net['connections']) != J['net']['connections']:
            fail('%s: net standing out %d != report %d' % (name, out, J['net']['standing_out']))
        if [c['score'] for c in net['connections'][:10]] and not all(
                close(a, b['score']) for a, b in zip([c['score'] for c in net['connections'][:10]], J['net']['slowest'])):
            fail('%s: slowest connections != net --json' % name)
    val = json.loads(run([lens, 'validate', '--json', d]).stdout)
    if J['gpu']['level'] != val['verdict']['level'] or J['gpu']['text'] != val['verdict']['text']:
        fail('%s: GPU verdict != validate --json' % name)

    # ---- the Markdown report's "what to look at next" says the same: the hang first, each straggler's instance ----
    md = run([lens, 'report', d]).stdout
    nxt = md[md.find('## What to look at next'):]
    if J['hang'] is not None and not nxt.split('\n- ', 1)[-1].startswith('**Hang: '):
        fail('%s: the hang is not the first hint' % name)
    for s in J['stragglers']['list'][:3]:
        i0 = s['instances'][0] if s['instances'] else None
        if i0 and i0['export'] and ('seq %d (rank %d last' % (i0['seq'], s['rank']) not in nxt or i0['export'] not in nxt):
            fail('%s: no hint names seq %d of rank %d and its export window' % (name, i0['seq'], s['rank']))

    # ---- the export window of a straggler's worst instance shows it ----
    S = J['stragglers']['list']
    if S and S[0]['instances'] and S[0]['instances'][0]['export']:
        inst = S[0]['instances'][0]
        out = os.path.join(tmp, name + '-seq.json')
        cmd = inst['export'].split()
        cmd = [lens] + cmd[1:cmd.index('-o')] + ['-o', out, d]
        run(cmd)
        ev = json.load(open(out))['traceEvents']
        want = '%s #%d (last rank)' % (inst['func'], inst['seq'])
        if not any(e.get('ph') == 'X' and e.get('name') == want for e in ev):
            fail('%s: %s does not show "%s"' % (name, ' '.join(cmd), want))

    # ---- screenshot (not in a sanitizer build: Chromium's rendering, not our code; CI time) ----
    if os.environ.get('LENS_SANITIZER') and not shots:
        continue
    png = os.path.join(shots or tmp, 'report-%s.png' % name)
    chrome(page, '--window-size=1400,3000', '--screenshot=' + png)
    if not os.path.exists(png) or os.path.getsize(png) < 10000:
        fail('%s: no screenshot' % name)
    elif shots:
        shrink_png(png)

# ---- a hostile host name (the traces name their host) shows as text, never as markup ----
HOSTILE = '<img id=pwn src=x>"&\'<!--'
d = os.path.join(tmp, 'hostile')
os.mkdir(d)
p = subprocess.run(['unshare', '--uts', sys.executable, '-c',
                    'import os, socket, sys; socket.sethostname(sys.argv[1]); os.execv(sys.argv[2], sys.argv[2:])',
                    HOSTILE, lens, 'replay', '--scenario', 'job-late-app', '--out', d, '--quiet'],
                   capture_output=True, timeout=240)
if p.returncode != 0:
    print('hostile host name: not checked (unshare --uts needs root here)')
else:
    page = os.path.join(tmp, 'hostile.html')
    run([lens, 'report', '--html', '-o', page, d])
    text = open(page, encoding='utf-8', errors='replace').read()
    if '<img id=pwn' in text or text.lower().count('</script') != 4:
        fail('hostile: the host name went into the page unescaped')
    dom = chrome(page, '--dump-dom').stdout
    C = page_check(dom) or {'errors': ['not drawn']}
    if 'id="pwn"' in dom or C['errors'] or html.escape(HOSTILE, quote=False) not in dom:
        fail('hostile: markup from a host name, or errors %s' % C['errors'])
    else:
        print('hostile host name: shown as text')

# ---- without libjs-d3: one line, exit 1, no page (an empty directory mounted over d3's) ----
empty = os.path.join(tmp, 'no-d3')
os.mkdir(empty)
page = os.path.join(tmp, 'no-d3.html')
p = subprocess.run(['unshare', '-m', 'sh', '-c', 'mount --bind "$1" /usr/share/javascript/d3 && shift && exec "$@"', 'sh',
                    empty, lens, 'report', '--html', '-o', page, os.path.join(tmp, 'job-late-app')],
                   capture_output=True, text=True, timeout=240)
if 'mount' in p.stderr or 'unshare' in p.stderr:
    print('without d3: not checked (unshare -m needs root here)')
elif p.returncode != 1 or p.stderr.count('\n') != 1 or 'libjs-d3' not in p.stderr or os.path.exists(page):
    fail('without d3: exit %d, stderr %r' % (p.returncode, p.stderr))
else:
    print('without d3: ' + p.stderr.strip())

if fails:
    print('%d failure(s); pages in %s' % (len(fails), tmp))
    sys.exit(1)
shutil.rmtree(tmp, ignore_errors=True)
print('ok: %d pages' % len(SCEN))
