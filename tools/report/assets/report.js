/* nccl-lens report --html: draws the page from the embedded `report --json`
 * document (d3 v3, embedded before this script). Every text from the traces
 * goes in through d3's .text() (never as HTML). After drawing, it writes
 * what it drew into <pre id="lens-check"> (JSON): per plot whether it was
 * drawn, its marks and the numbers it carries, the errors caught, and how
 * many SVG and canvas elements hold something (tests/report/html_check.py). */
(function () {
  'use strict';
  var errors = window.lensErrors || [];
  var check = {plots: {}, skipped: {}, errors: errors, plots_expected: 0, plots_drawn: 0,
               svg_nonempty: 0, canvas_nonempty: 0, verdict: []};
  var D = null;
  try {
    D = JSON.parse(document.getElementById('lens-data').textContent);
  } catch (e) {
    errors.push('data: ' + e.message);
  }
  var main = d3.select('#report');
  var tip = d3.select('body').append('div').attr('class', 'tip');
  var fint = d3.format(',d'), fbig = d3.format(',.0f'), fsmall = d3.format('.3g');
  /* 3 significant digits, without exponents for the ranges a report has */
  function f3(v) {
    if (v === null || v === undefined || isNaN(v)) return '-';
    if (v === 0) return '0'; /* not "0.00": an axis' origin, a lag bin's lower edge */
    var a = Math.abs(v);
    return a >= 1000 ? fbig(v) : a > 0 && a < 1e-3 ? d3.format('.2e')(v) : fsmall(v);
  }

  /* a tick label: 3 significant digits without trailing zeros (1, 16, 0.25, not 1.00, 16.0, 0.250) */
  function tick3(v) {
    if (v === null || v === undefined || isNaN(v)) return '-';
    return Math.abs(v) >= 1000 ? fbig(v) : String(Number(v.toPrecision(3)));
  }

  function showTip(text) {
    var ev = d3.event;
    tip.style('display', 'block').text(text)
      .style('left', (ev.clientX + 14) + 'px').style('top', (ev.clientY + 14) + 'px');
  }
  function hideTip() { tip.style('display', 'none'); }
  function bytes(b) {
    var u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'], i = 0;
    while (b >= 1024 && i < u.length - 1) { b /= 1024; i++; }
    return f3(b) + ' ' + u[i];
  }
  /* a size on an axis: 3 significant digits without trailing zeros (8 KiB, 1.5 MiB, not 8.00 KiB) */
  function bytesTick(b) {
    var u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'], i = 0;
    while (b >= 1024 && i < u.length - 1) { b /= 1024; i++; }
    return String(Number(b.toPrecision(3))) + ' ' + u[i];
  }
  /* a communicator without a name (NCCL gives none to a split without commName) by its id alone, not "- (id)" */
  function commLabel(o) { return o.comm_name ? o.comm_name + ' (' + o.comm_id + ')' : o.comm_id; }
  function section(id, title) {
    var s = main.append('section').attr('id', id);
    s.append('h2').text(title);
    return s;
  }
  function reading(s, text) { s.append('p').attr('class', 'reading').text('Reading: ' + text); }
  function none(s, name, text) {
    s.append('p').attr('class', 'none').text(text);
    check.skipped[name] = text;
  }
  /* One plot: fn draws it and returns {marks, values}; a throw is recorded as an error. */
  function plot(name, fn) {
    check.plots_expected++;
    try {
      var r = fn();
      r.drawn = r.marks > 0;
      check.plots[name] = r;
      if (r.drawn) check.plots_drawn++;
    } catch (e) {
      errors.push(name + ': ' + e.message);
      check.plots[name] = {drawn: false};
    }
  }
  /* The drawing width a canvas plot of section s has on this window: its width less the margins, within [lo, hi]. */
  function plotWidth(s, m, lo, hi) {
    var avail = s.node().getBoundingClientRect().width - m.l - m.r;
    return Math.floor(Math.max(lo, Math.min(hi, avail > 0 ? avail : hi)));
  }
  function frame(s, w, h, m) {
    /* a viewBox: on a window narrower than the plot it scales down whole (report.css), labels included,
       rather than cutting its right side off */
    var svg = s.append('div').attr('class', 'plot').append('svg')
      .attr('width', w + m.l + m.r).attr('height', h + m.t + m.b)
      .attr('viewBox', '0 0 ' + (w + m.l + m.r) + ' ' + (h + m.t + m.b));
    return svg.append('g').attr('transform', 'translate(' + m.l + ',' + m.t + ')');
  }
  function axes(g, x, y, w, h, xlabel, ylabel, xfmt, yfmt, xticks, yticks) {
    var xa = d3.svg.axis().scale(x).orient('bottom');
    if (xticks) xa.tickValues(xticks);
    if (xfmt) xa.tickFormat(xfmt);
    var ya = d3.svg.axis().scale(y).orient('left');
    if (yfmt) ya.tickFormat(yfmt);
    if (yticks) ya.tickValues(yticks);
    else if (y.ticks) ya.ticks(6);
    g.append('g').attr('class', 'axis').attr('transform', 'translate(0,' + h + ')').call(xa);
    var yg = g.append('g').attr('class', 'axis').call(ya);
    var xl = g.append('text').attr('class', 'label').attr('x', w / 2).attr('y', h + 36).attr('text-anchor', 'middle')
      .text(xlabel);
    /* the y label clear of the widest tick label (counts of 600000 ran into it) */
    var tw = 0;
    yg.selectAll('text').each(function () { tw = Math.max(tw, this.getComputedTextLength ? this.getComputedTextLength() : 0); });
    g.append('text').attr('class', 'label').attr('transform', 'rotate(-90)').attr('x', -h / 2)
      .attr('y', -Math.max(48, tw + 18)).attr('text-anchor', 'middle').text(ylabel);
    return {xlabel: xl, xaxis: g.select('.axis')};
  }
  /* slanted x tick labels (many of them), the x label moved below them: returns the room they take */
  function slantX(a, h) {
    a.xaxis.selectAll('text').attr('transform', 'rotate(-35)').style('text-anchor', 'end')
      .attr('dx', '-0.4em').attr('dy', '0.6em');
    var deep = 0;
    a.xaxis.selectAll('text').each(function () {
      var b = this.getBBox ? this.getBBox() : {width: 0, height: 0};
      /* a label of width w slanted by 35 degrees reaches w sin 35 + h cos 35 below the axis */
      deep = Math.max(deep, b.width * 0.574 + b.height * 0.819);
    });
    a.xlabel.attr('y', h + Math.round(deep) + 22);
    return Math.round(deep) + 28;
  }
  /* the svg of g grown so that what lies room px below the plot shows */
  function growBottom(g, h, m, room) {
    var svg = d3.select(g.node().parentNode);
    svg.attr('height', Math.max(+svg.attr('height'), h + m.t + room + 14));
  }
  /* whether the x label lies below every x tick label (html_check.py asserts it) */
  function labelClear(a) {
    var lb = a.xlabel.node().getBoundingClientRect(), ok = true;
    a.xaxis.selectAll('text').each(function () {
      if (this.getBoundingClientRect().bottom > lb.top + 1) ok = false;
    });
    return ok;
  }
  /* d3 symbol and its glyph in the legend; odd curves drawn open (outlined), even ones filled */
  var SHAPES = [['circle', '\u25cf'], ['diamond', '\u25c7'], ['square', '\u25a0'], ['triangle-up', '\u25b3'],
                ['cross', '\u271a'], ['triangle-down', '\u25bd']];
  var NO_TRAFFIC = '#dfe2e8', SLOW_LINK = '#c62828', SLOW_PACE = '#e69b00', TYPICAL = '#6b8fc7';
  /* items: [text, colour, border colour (optional)] */
  function legend(s, items) {
    var l = s.append('div').attr('class', 'legend');
    items.forEach(function (it) {
      var e = l.append('span');
      if (it[3]) e.append('b').attr('class', 'glyph').style('color', it[1]).text(it[3]);
      else e.append('i').style('background', it[1]).style('box-shadow', it[2] ? 'inset 0 0 0 2px ' + it[2] : null);
      e.append('span').text(it[0]);
    });
  }
  var causeColor = {late_app_call: '#d62728', slow_enqueue: '#ff7f0e', slow_launch: '#bcbd22', gpu_busy: '#9467bd',
                    starved_proxy: '#8c564b', slow_link: '#1f77b4', unknown: '#7f7f7f'};
  /* a cause key in the words the text and Markdown views use (the JSON's cause_words) */
  function causeWords(k) {
    var w = D && D.stragglers && D.stragglers.cause_words;
    return (w && w[k]) || k.replace(/_/g, ' ');
  }
  function topCause(c) {
    var best = null;
    for (var k in c) if (!best || c[k] > c[best]) best = k;
    return best || 'unknown';
  }

  /* ---- verdict ---- */
  var labels = {hang: 'Hang', stragglers: 'Waiting', link: 'Network', threads: 'Threads', gpu: 'GPU times'};
  function verdict() {
    var s = main.append('section').attr('id', 'sec-verdict');
    s.append('h2').text('Verdict');
    var ul = s.append('ul').attr('class', 'verdict');
    D.verdict.forEach(function (v) {
      var li = ul.append('li').attr('class', v.status);
      li.append('b').text(labels[v.key] || v.key);
      li.append('span').text(v.text + ' ');
      li.append('a').attr('href', '#' + v.section).text('(details)');
      check.verdict.push(v.key + ':' + v.status);
    });
  }

  /* ---- bus bandwidth against size ---- */
  function busbw() {
    var s = section('sec-busbw', 'Bus bandwidth against message size');
    var series = D.busbw.series;
    if (!series.length) {
      /* say what left the plot empty: p2p only (a bus bandwidth means nothing for them), partial instances,
       * or instances not decomposed on all their ranks */
      var lo = D.busbw.left_out || {}, why = [];
      if (lo.p2p) why.push(fint(lo.p2p) + ' point-to-point transfer' + (lo.p2p > 1 ? 's' : '') +
                           ' (a bus bandwidth has no meaning for them)');
      if (lo.partial) why.push(fint(lo.partial) + ' partial instance' + (lo.partial > 1 ? 's' : '') +
                               ' (a rank unseen: the execution is only an upper bound)');
      if (lo.undecomposed) why.push(fint(lo.undecomposed) + ' instance' + (lo.undecomposed > 1 ? 's' : '') +
                                    ' not decomposed across all their ranks');
      return none(s, 'busbw', 'No collective was decomposed on all its ranks: no bandwidth to plot' +
                  (why.length ? '; left out: ' + why.join(', ') + '.' : '.'));
    }
    reading(s, 'each line is one collective of one communicator; a point is the bus bandwidth (nccl-tests factors) ' +
            'over the instances of that size, from the execution (the last rank\'s span, waiting left out); ' +
            'the bar spans the slowest to the fastest instance.');
    plot('busbw', function () {
      var w = 900, h = 300, m = {l: 64, r: 20, t: 10, b: 44};
      var g = frame(s, w, h, m);
      var all = [];
      series.forEach(function (se) { se.points.forEach(function (p) { all.push(p); }); });
      var lo = d3.min(all, function (p) { return p.bytes; }), hi = d3.max(all, function (p) { return p.bytes; });
      if (lo === hi) { lo /= 2; hi *= 2; }
      var x = d3.scale.log().base(2).domain([lo, hi]).range([0, w]);
      var y = d3.scale.linear().domain([0, 1.08 * (d3.max(all, function (p) { return p.max; }) || 1)]).range([h, 0]);
      /* the sizes themselves while few, else powers of two */
      var ticks = d3.set(all.map(function (p) { return p.bytes; })).values().map(Number).sort(d3.ascending);
      if (ticks.length > 8) {
        ticks = [];
        var t = Math.pow(2, Math.floor(Math.log(lo) / Math.LN2));
        var step = Math.max(1, Math.ceil((Math.log(hi / lo) / Math.LN2) / 10));
        for (; t <= hi; t *= Math.pow(2, step)) if (t >= lo) ticks.push(t);
      }
      axes(g, x, y, w, h, 'message size (bytes, log scale)', 'bus bandwidth (GB/s)', bytesTick, null, ticks);
      var color = d3.scale.category10(), marks = 0, values = [];
      var line = d3.svg.line().x(function (p) { return x(p.bytes); }).y(function (p) { return y(p.busbw); });
      var items = [];
      series.forEach(function (se, i) {
        var c = color(i), name = se.func + ' on ' + commLabel(se);
        items.push([name, c, null, SHAPES[i % SHAPES.length][1]]);
        g.append('path').attr('d', line(se.points)).attr('fill', 'none').attr('stroke', c).attr('stroke-width', 1.5);
        var pts = g.selectAll('.p' + i).data(se.points).enter().append('g');
        pts.append('line').attr('x1', function (p) { return x(p.bytes); }).attr('x2', function (p) { return x(p.bytes); })
          .attr('y1', function (p) { return y(p.min); }).attr('y2', function (p) { return y(p.max); })
          .attr('stroke', c).attr('stroke-opacity', 0.6);
        /* a shape per curve besides its colour: two collectives of the same size and bandwidth (mixed's
         * AllReduce of 8 KiB on two communicators) drew one dot over the other, the first unseen */
        var shape = SHAPES[i % SHAPES.length];
        pts.append('path').attr('class', 'pt')
          .attr('d', d3.svg.symbol().type(shape[0]).size(i < SHAPES.length ? 70 : 40))
          .attr('transform', function (p) { return 'translate(' + x(p.bytes) + ',' + y(p.busbw) + ')'; })
          .attr('fill', i % 2 ? 'none' : c).attr('stroke', c).attr('stroke-width', 1.6)
          .on('mousemove', function (p) {
            showTip(name + '\n' + bytes(p.bytes) + ': ' + f3(p.busbw) + ' GB/s over ' + p.count +
                    ' instances\nslowest ' + f3(p.min) + ', fastest ' + f3(p.max) + ' GB/s');
          }).on('mouseout', hideTip);
        se.points.forEach(function (p) { values.push([p.bytes, p.busbw]); marks++; });
      });
      legend(s, items);
      /* each curve's shape, distinct among the first six (html_check.py) */
      return {marks: marks, values: values, points_drawn: g.selectAll('path.pt').size(),
              shapes: series.map(function (se, i) { return SHAPES[i % SHAPES.length][0] + (i % 2 ? '-open' : ''); })};
    });
  }

  /* ---- waiting: heatmap and stragglers ---- */
  function waits() {
    var s = section('sec-stragglers', 'Who made the others wait');
    var W = D.waits;
    if (!W) {
      none(s, 'waits', 'No rank waited for another in a collective decomposed across its ranks (or no host could be ' +
           'placed on the job time base): nothing to map.');
    } else {
      reading(s, 'each row is a rank' + (W.rank_group > 1 ? ' group of ' + W.rank_group : '') + ' of ' + commLabel(W) +
              ', each column ' + f3(W.bin_s * 1e3) + ' ms of the run (job time); the darker, the longer that rank ' +
              'waited inside its collectives for the last rank to arrive. A light row among dark ones is the rank ' +
              'the others wait for.');
      plot('waits', function () {
        var m = {l: 64, r: 20, t: 10, b: 44};
        /* a canvas does not scale with the window as the SVG plots do: drawn at the width there is (at most
           1000 px, at least 320), so a narrow window does not scroll sideways for it */
        var rows = W.rows.length, bins = W.n_bins, w = plotWidth(s, m, 320, 1000);
        var h = Math.min(Math.max(rows * 18, 60), 640);
        var div = s.append('div').attr('class', 'plot').style('height', (h + m.t + m.b) + 'px');
        var canvas = div.append('canvas').attr('width', w).attr('height', h).style('position', 'absolute')
          .style('left', m.l + 'px').style('top', m.t + 'px');
        var max = 0, total = 0, nonzero = 0;
        W.rows.forEach(function (r) { r.forEach(function (v) { if (v > max) max = v; total += v; if (v > 0) nonzero++; }); });
        var col = d3.scale.sqrt().domain([0, max || 1]).range(['#f7f7fb', '#7a0019']).interpolate(d3.interpolateLab);
        var ctx = canvas.node().getContext('2d'), cw = w / bins, ch = h / rows;
        ctx.fillStyle = '#f7f7fb';
        ctx.fillRect(0, 0, w, h);
        W.rows.forEach(function (r, ri) {
          r.forEach(function (v, b) {
            if (v <= 0) return;
            ctx.fillStyle = col(v);
            ctx.fillRect(b * cw, ri * ch, Math.ceil(cw), Math.max(ch, 1));
          });
        });
        var svg = div.append('svg').attr('width', w + m.l + m.r).attr('height', h + m.t + m.b)
          .style('position', 'absolute').style('left', 0).style('top', 0).style('pointer-events', 'none');
        var g = svg.append('g').attr('transform', 'translate(' + m.l + ',' + m.t + ')');
        /* a run shorter than a second in ms (its ticks read 2.2, not 0.00220) */
        var tu = bins * W.bin_s < 1 ? 1e3 : 1, tn = tu === 1 ? 's' : 'ms';
        var x = d3.scale.linear().domain([W.t0_s * tu, (W.t0_s + bins * W.bin_s) * tu]).range([0, w]);
        var y = d3.scale.linear().domain([0, rows * W.rank_group]).range([0, h]);
        /* rank labels at the rows' middles while they fit, else round ranks at the rows' tops */
        var yt = rows <= 24 ? d3.range(rows).map(function (r) { return (r + 0.5) * W.rank_group; }) : y.ticks(8);
        var ya = d3.svg.axis().scale(y).orient('left').tickValues(yt).tickFormat(function (v) {
          return rows <= 24 && W.rank_group === 1 ? String(Math.floor(v)) : String(Math.round(v)); });
        var xa = d3.svg.axis().scale(x).orient('bottom').ticks(8).tickFormat(tick3);
        g.append('g').attr('class', 'axis').attr('transform', 'translate(0,' + h + ')').call(xa);
        g.append('g').attr('class', 'axis').call(ya);
        g.append('text').attr('class', 'label').attr('x', w / 2).attr('y', h + 36).attr('text-anchor', 'middle')
          .text('time after the job\'s first event (' + tn + ', job time)');
        g.append('text').attr('class', 'label').attr('transform', 'rotate(-90)').attr('x', -h / 2).attr('y', -48)
          .attr('text-anchor', 'middle').text('rank');
        canvas.on('mousemove', function () {
          var p = d3.mouse(this), b = Math.floor(p[0] / cw), ri = Math.floor(p[1] / ch);
          if (b < 0 || b >= bins || ri < 0 || ri >= rows) return hideTip();
          var r0 = ri * W.rank_group, rl = W.rank_group > 1 ? 'ranks ' + r0 + '-' + (r0 + W.rank_group - 1) : 'rank ' + r0;
          showTip(rl + '\n' + f3((W.t0_s + b * W.bin_s) * tu) + ' .. ' + f3((W.t0_s + (b + 1) * W.bin_s) * tu) + ' ' +
                  tn + '\nwaited ' + f3(W.rows[ri][b]) + ' us');
        }).on('mouseout', hideTip);
        /* what the shades mean: sqrt scale, so a quarter of the darkest cell's wait is half way */
        legend(s, [['no wait', col(0)], [f3(max / 4) + ' us', col(max / 4)],
                   [f3(max) + ' us waited (the darkest cell)', col(max)]]);
        return {marks: nonzero, values: {total_us: total, nonzero: nonzero, rows: rows, bins: bins},
                key_us: [0, max / 4, max], time_unit: tn, canvas: canvas.node()};
      });
    }
    var S = D.stragglers;
    s.append('h3').text('Stragglers, by the wait they caused');
    if (!S.list.length)
      return none(s, 'stragglers', 'No straggler: no rank made the others wait ' + f3(S.threshold_us) + ' us or more.');
    reading(s, 'a bar is the others\' total wait for that rank when it arrived last; beside it, that wait as a share ' +
            'of all ranks\' collective time (' + f3(S.collective_us / 1e3) + ' ms) and how many times the rank was ' +
            'last; its colour is its most frequent cause. ' +
            'Click a bar for its instances and the export command that shows each one.');
    var detail;
    plot('stragglers', function () {
      var list = S.list.slice(0, 20), bh = 22, w = 700, h = list.length * bh;
      var m = {l: 260, r: 120, t: 6, b: 44};
      var g = frame(s, w, h, m);
      var x = d3.scale.linear().domain([0, d3.max(list, function (d) { return d.wait_caused_us / 1e3; }) || 1])
        .range([0, w]);
      var y = d3.scale.ordinal().domain(d3.range(list.length)).rangeRoundBands([0, h], 0.15);
      g.append('g').attr('class', 'axis').attr('transform', 'translate(0,' + h + ')')
        .call(d3.svg.axis().scale(x).orient('bottom').ticks(6));
      g.append('text').attr('class', 'label').attr('x', w / 2).attr('y', h + 36).attr('text-anchor', 'middle')
        .text('wait caused (ms, the other ranks\' waits summed)');
      var bars = g.selectAll('.bar').data(list).enter().append('rect').attr('class', 'bar')
        .attr('x', 0).attr('y', function (d, i) { return y(i); }).attr('height', y.rangeBand())
        .attr('width', function (d) { return Math.max(1, x(d.wait_caused_us / 1e3)); })
        .attr('fill', function (d) { return causeColor[topCause(d.causes)] || '#7f7f7f'; })
        .on('mousemove', function (d) {
          showTip('rank ' + d.rank + ' of ' + commLabel(d) + ' (' + d.host + ':' + d.pid + ')\nwait caused ' +
                  f3(d.wait_caused_us / 1e3) + ' ms, ' + f3(d.share_pct) + '% of the collective time\nlast in ' +
                  d.times_last + ' instances: ' + d.causes_text);
        }).on('mouseout', hideTip)
        .on('click', function (d, i) { select(i); });
      g.selectAll('.name').data(list).enter().append('text').attr('class', 'label')
        .attr('x', -6).attr('y', function (d, i) { return y(i) + y.rangeBand() / 2 + 4; }).attr('text-anchor', 'end')
        .text(function (d) { return 'rank ' + d.rank + ' of ' + (d.comm_name || d.comm_id) + ' (' + d.host + ':' + d.pid + ')'; });
      g.selectAll('.pct').data(list).enter().append('text').attr('class', 'label')
        .attr('x', function (d) { return Math.max(1, x(d.wait_caused_us / 1e3)) + 5; })
        .attr('y', function (d, i) { return y(i) + y.rangeBand() / 2 + 4; })
        .text(function (d) { return f3(d.share_pct) + '%, last ' + d.times_last + 'x'; });
      var items = [];
      /* grey is also a straggler timed on host spans (its tooltip and table say so): the legend says both */
      var onHost = list.some(function (d) { return d.host_spans > 0; });
      for (var k in causeColor)
        items.push([k === 'unknown' && onHost ? causeWords(k) + ' / ' + S.host_spans_words : causeWords(k), causeColor[k]]);
      legend(s, items);
      detail = s.append('div').attr('id', 'straggler-instances');
      function select(i) {
        bars.classed('sel', function (d, k) { return k === i; });
        var d = list[i];
        detail.html('');
        detail.append('h3').text('Instances where rank ' + d.rank + ' of ' + commLabel(d) +
                                 ' arrived last (' + (d.instances.length === d.times_last
                                   ? (d.times_last === 1 ? 'once' : 'all ' + d.times_last + ' times')
                                   : 'the ' + d.instances.length + ' longest waits of ' + d.times_last) + ')');
        var t = detail.append('table').attr('class', 'inst'), hr = t.append('tr');
        /* times in ms while the latest is under 10 s (8.71e-4 s read badly), else s */
        var tmax = d3.max(d.instances, function (n) { return n.t_s; }) || 0, tu = tmax < 10 ? 1e3 : 1;
        ['seq', 'func', 'size', 'exec us', 'max wait us', 'waits summed us', 'cause',
         'at (' + (tu === 1 ? 's' : 'ms') + ', job time)']
          .forEach(function (c) { hr.append('th').text(c); });
        hr.append('th').attr('class', 'l').text('see it: export command (TRACES = the traces given to report)');
        d.instances.forEach(function (n) {
          var tr = t.append('tr');
          [n.seq, n.func, bytes(n.bytes), f3(n.exec_us), f3(n.max_wait_us), f3(n.wait_sum_us),
           n.cause_words || causeWords(n.cause),
           n.t_s === null ? '-' : f3(n.t_s * tu)].forEach(function (c) { tr.append('td').text(c); });
          tr.append('td').attr('class', 'l').append('code').text(n.export || '-');
        });
      }
      select(0);
      return {marks: list.length, values: list.map(function (d) { return d.wait_caused_us; })};
    });
  }

  /* ---- network ---- */
  function network() {
    var s = section('sec-net', 'Network');
    var N = D.net;
    if (!N) return none(s, 'net', 'No network steps recorded (no ProxyStep events): links not measured.');
    if (N.matrix && N.matrix.cells.length) {
      var M = N.matrix;
      reading(s, 'wire bandwidth of ' + commLabel(M) + ' from each rank (row) to each peer (column)' +
              (M.rank_group > 1 ? ', ranks grouped by ' + M.rank_group : '') + ': bytes sent over the time in flight ' +
              'on the network (GB/s). A pale cell among darker ones in its row is a slow link; a red outline marks a ' +
              'slow link (as the verdict says), an amber one a connection slow by its pace alone, waiting on a ' +
              'GPU; grey cells exchanged nothing.');
      plot('net_matrix', function () {
        /* cells of at least 22 px and the matrix at least 240 px a side, so a few ranks read as a matrix */
        var m = {l: 64, r: 20, t: 10, b: 44};
        var n = Math.ceil(M.nranks / M.rank_group), side = Math.min(Math.max(n * 22, 240), 560, plotWidth(s, m, 200, 560));
        var div = s.append('div').attr('class', 'plot').style('height', (side + m.t + m.b) + 'px');
        var canvas = div.append('canvas').attr('width', side).attr('height', side).style('position', 'absolute')
          .style('left', m.l + 'px').style('top', m.t + 'px');
        var max = d3.max(M.cells, function (c) { return c[2]; }) || 1, sum = 0;
        var minpos = d3.min(M.cells, function (c) { return c[2] > 0 ? c[2] : null; }) || max;
        /* a link 50x slower than its row's others is the one to see: on a linear scale it and a 5x slower one are
         * both "pale"; past a 20x spread the shades follow the logarithm (a cell of 0 takes the palest) */
        var logc = max / minpos > 20;
        var col = (logc ? d3.scale.log().domain([minpos, max]).clamp(true) : d3.scale.linear().domain([0, max]))
          .range(['#fff3e0', '#08306b']).interpolate(d3.interpolateLab);
        var shade = function (v) { return logc && !(v > 0) ? '#fff3e0' : col(v); };
        var ctx = canvas.node().getContext('2d'), cs = side / n, byCell = {};
        ctx.fillStyle = NO_TRAFFIC; /* grey: no send step between them, unlike a slow cell (cream) */
        ctx.fillRect(0, 0, side, side);
        M.cells.forEach(function (c) {
          var a = c[0] / M.rank_group, b = c[1] / M.rank_group;
          byCell[a + ',' + b] = c;
          ctx.fillStyle = shade(c[2]);
          ctx.fillRect(b * cs, a * cs, Math.max(cs, 1), Math.max(cs, 1));
          sum += c[2];
        });
        var svg = div.append('svg').attr('width', side + m.l + m.r).attr('height', side + m.t + m.b)
          .style('position', 'absolute').style('left', 0).style('top', 0).style('pointer-events', 'none');
        var g = svg.append('g').attr('transform', 'translate(' + m.l + ',' + m.t + ')');
        var x = d3.scale.linear().domain([0, n * M.rank_group]).range([0, side]);
        /* up to 32 rows a tick names each row at its middle (its first rank); more get round numbers at the
         * cells' edges */
        var ticks = null, fmt = d3.format('d');
        if (n <= 32) {
          ticks = d3.range(n).map(function (i) { return (i + 0.5) * M.rank_group; });
          fmt = function (v) { return String(Math.floor(v / M.rank_group) * M.rank_group); };
        }
        axes(g, x, x, side, side, 'peer (receiving rank)', 'rank (sending)', fmt, fmt, ticks, ticks);
        canvas.on('mousemove', function () {
          var p = d3.mouse(this), c = byCell[Math.floor(p[1] / cs) + ',' + Math.floor(p[0] / cs)];
          if (!c) return hideTip();
          showTip('r' + c[0] + ' -> r' + c[1] + (M.rank_group > 1 ? ' (groups of ' + M.rank_group + ')' : '') + '\n' +
                  f3(c[2]) + ' GB/s on the wire, ' + bytes(c[3]) + ' sent');
        }).on('mouseout', hideTip);
        /* the slowest connections that stand out or are slow, outlined: red a slow link (its own wire time
         * makes its steps 2x slower, on the network: the verdict's rule; it need not stand out by its pace),
         * amber one slow by its pace alone (it waits) */
        var out = d3.set(), pace = d3.set();
        N.slowest.forEach(function (l) {
          if (!(l.stands_out || l.slow_link) || l.comm_id !== M.comm_id) return;
          var k = Math.floor(l.src / M.rank_group) + ',' + Math.floor(l.dst / M.rank_group);
          (l.slow_link ? out : pace).add(k);
        });
        out.values().forEach(function (k) { pace.remove(k); });
        ctx.lineWidth = Math.max(1, Math.min(3, cs / 8));
        [[pace, SLOW_PACE], [out, SLOW_LINK]].forEach(function (o) {
          ctx.strokeStyle = o[1];
          o[0].values().forEach(function (k) {
            var ab = k.split(',').map(Number), lw = ctx.lineWidth;
            ctx.strokeRect(ab[1] * cs + lw / 2, ab[0] * cs + lw / 2, Math.max(cs - lw, 1), Math.max(cs - lw, 1));
          });
        });
        /* what the colours mean: the slowest and the fastest cell, half way between (geometric on a log scale) */
        var mid = logc ? Math.sqrt(minpos * max) : max / 2, key = logc ? [minpos, mid, max] : [0, mid, max];
        var items = [[f3(key[0]) + ' GB/s' + (logc ? ' (slowest cell; log scale)' : ''), shade(key[0])],
                     [f3(mid) + ' GB/s', col(mid)], [f3(max) + ' GB/s (fastest cell)', col(max)],
                     ['no traffic', NO_TRAFFIC]];
        if (out.size()) items.push(['slow link (on the network)', '#fff', SLOW_LINK]);
        if (pace.size()) items.push(['slow by its pace, waiting on a GPU', '#fff', SLOW_PACE]);
        legend(s, items);
        return {marks: M.cells.length, values: {cells: M.cells.length, gbps_sum: sum}, scale: logc ? 'log' : 'linear',
                key_gbps: key, outlined: out.values().sort(), outlined_pace: pace.values().sort(),
                canvas: canvas.node()};
      });
    } else {
      none(s, 'net_matrix', 'No send steps with a wire time: no rank-by-peer matrix.');
    }
    if (N.job_slow_links.length) {
      s.append('h3').text('Links the job waited on (job view)');
      var ul = s.append('ul');
      N.job_slow_links.forEach(function (l) {
        ul.append('li').text('r' + l.src + ' -> r' + l.dst + ': in ' + l.instances + ' instances the ranks arrived ' +
                             'together and this link\'s steps were ' + f3(l.ratio) + 'x slower (median) than the ' +
                             'same proxies\' other links.');
      });
    }
    /* connections with timed steps: one with none (mixed's sendrecv to itself: no step timed) has no pace */
    var timed = N.slowest.filter(function (l) { return l.steps > 0; });
    if (!timed.length)
      return none(s, 'net_slowest', 'No connection with timed steps' + (N.slowest.length ? ' (' + fint(N.connections) +
                  ' connection' + (N.connections > 1 ? 's' : '') + ' without a step timed): no pace to compare.' : '.'));
    s.append('h3').text('The slowest connections');
    reading(s, 'a bar is how many times slower than typical a connection moves its steps (the median over its steps ' +
            'of step time / the typical time of steps of that size); past the dashed line (' + 2 + 'x) it stands out.');
    plot('net_slowest', function () {
      var L = timed, bh = 20, w = 600, h = L.length * bh, m = {l: 220, r: 60, t: 6, b: 44};
      var g = frame(s, w, h, m);
      var x = d3.scale.linear().domain([0, Math.max(2.5, d3.max(L, function (d) { return d.score; }) * 1.05)]).range([0, w]);
      var y = d3.scale.ordinal().domain(d3.range(L.length)).rangeRoundBands([0, h], 0.15);
      g.append('g').attr('class', 'axis').attr('transform', 'translate(0,' + h + ')')
        .call(d3.svg.axis().scale(x).orient('bottom').ticks(6));
      g.append('text').attr('class', 'label').attr('x', w / 2).attr('y', h + 36).attr('text-anchor', 'middle')
        .text('step time / typical step time (x)');
      g.selectAll('.bar').data(L).enter().append('rect').attr('class', 'bar').attr('x', 0)
        .attr('y', function (d, i) { return y(i); }).attr('height', y.rangeBand())
        .attr('width', function (d) { return Math.max(1, x(d.score)); })
        .attr('fill', function (d) { return d.slow_link ? SLOW_LINK : d.stands_out ? SLOW_PACE : TYPICAL; })
        .on('mousemove', function (d) {
          showTip('r' + d.src + ' -> r' + d.dst + ' channel ' + d.channel + ' of ' + commLabel(d) + '\n' + f3(d.score) +
                  'x typical, mostly ' + (d.dominant || '-') + '\n' + f3(d.gbps) + ' GB/s on the wire, ' + d.steps +
                  ' steps');
        }).on('mouseout', hideTip);
      g.selectAll('.name').data(L).enter().append('text').attr('class', 'label').attr('x', -6)
        .attr('y', function (d, i) { return y(i) + y.rangeBand() / 2 + 4; }).attr('text-anchor', 'end')
        .text(function (d) { return 'r' + d.src + ' -> r' + d.dst + ' ch ' + d.channel + ' (' + (d.comm_name || d.comm_id) + ')'; });
      /* the 2x line over the bars (under them it hid where bars crossed it) */
      g.append('line').attr('x1', x(2)).attr('x2', x(2)).attr('y1', 0).attr('y2', h).attr('stroke', '#1d2330')
        .attr('stroke-dasharray', '4,3').style('pointer-events', 'none');
      legend(s, [['slow link: its own wire time makes its steps 2x slower, on the network', SLOW_LINK],
                 ['stands out by its pace, waiting (not a slow link)', SLOW_PACE], ['within 2x', TYPICAL]]);
      return {marks: L.length, values: L.map(function (d) { return d.score; }),
              colours: L.map(function (d) { return d.slow_link ? 'slow' : d.stands_out ? 'pace' : 'typical'; })};
    });
    s.append('h3').text('Where each connection\'s step time goes');
    if (!timed.some(function (l) { return d3.sum(l.split_us) > 0; }))
      return none(s, 'net_split', 'No step time split: these connections\' steps carry no phase time.');
    reading(s, 'the share of the steps\' time in each phase, both ends of the connection summed: wire = in flight, ' +
            'send_peer_wait = the receiver had no buffer free, send_gpu_wait / recv_gpu_wait = waiting for a GPU.');
    plot('net_split', function () {
      var L = timed, bh = 20, w = 600, h = L.length * bh, m = {l: 220, r: 60, t: 6, b: 44};
      var g = frame(s, w, h, m);
      var x = d3.scale.linear().domain([0, 100]).range([0, w]);
      var y = d3.scale.ordinal().domain(d3.range(L.length)).rangeRoundBands([0, h], 0.15);
      var color = d3.scale.category10().domain(N.phases);
      g.append('g').attr('class', 'axis').attr('transform', 'translate(0,' + h + ')')
        .call(d3.svg.axis().scale(x).orient('bottom').ticks(5));
      g.append('text').attr('class', 'label').attr('x', w / 2).attr('y', h + 36).attr('text-anchor', 'middle')
        .text('share of the step time (%)');
      var marks = 0, sums = [];
      L.forEach(function (d, i) {
        var tot = d3.sum(d.split_us), at = 0;
        sums.push(tot);
        d.split_us.forEach(function (v, p) {
          if (!(v > 0) || !tot) return;
          g.append('rect').attr('x', x(100 * at / tot)).attr('y', y(i)).attr('height', y.rangeBand())
            .attr('width', Math.max(0.5, x(100 * v / tot))).attr('fill', color(N.phases[p]))
            .on('mousemove', function () {
              showTip('r' + d.src + ' -> r' + d.dst + ' ch ' + d.channel + '\n' + N.phases[p] + ': ' + f3(v) + ' us (' +
                      f3(100 * v / tot) + '%)');
            }).on('mouseout', hideTip);
          at += v;
          marks++;
        });
        g.append('text').attr('class', 'label').attr('x', -6).attr('y', y(i) + y.rangeBand() / 2 + 4)
          .attr('text-anchor', 'end').text('r' + d.src + ' -> r' + d.dst + ' ch ' + d.channel);
      });
      /* the phases that hold time in these bars, not every phase the network view knows */
      var shown = N.phases.filter(function (p, k) { return L.some(function (d) { return d.split_us[k] > 0; }); });
      legend(s, shown.map(function (p) { return [p, color(p)]; }));
      if (shown.length === 1 && shown[0] === 'unknown')
        s.append('p').attr('class', 'none').text('No phase boundary of these steps was recorded (no step states: ' +
                                                 'a NULL ProxyOp handle, or dropped records): their time is not ' +
                                                 'split, never guessed.');
      return {marks: marks, values: sums, legend: shown};
    });
  }

  /* ---- proxy and profiler threads ---- */
  function threads() {
    var s = section('sec-threads', 'Proxy and profiler threads');
    var T = D.threads;
    if (!T.lag.n) {
      none(s, 'lag', 'No KernelCh with a notice lag (no GPU clock map): lag not measured.');
    } else {
      reading(s, 'how long after a kernel channel finished on the GPU the thread that polls it (the proxy; on NCCL ' +
              '>= 2.31 the profiler thread) noticed it: ' + fint(T.lag.n) + ' channels, average ' + f3(T.lag.avg_us) +
              ' us, max ' + f3(T.lag.max_us) + ' us. A long tail means a thread kept from its CPU.');
      plot('lag', function () {
        var used = [];
        T.lag.counts.forEach(function (c, i) { if (c) used.push(i); });
        var lo = used[0], hi = used[used.length - 1], idx = d3.range(lo, hi + 1);
        var w = Math.max(360, Math.min(900, 60 * idx.length + 60)), h = 220, m = {l: 72, r: 20, t: 10, b: 44};
        var g = frame(s, w, h, m);
        var x = d3.scale.ordinal().domain(idx).rangeRoundBands([0, w], 0.1);
        var y = d3.scale.linear().domain([0, d3.max(T.lag.counts) * 1.05]).range([h, 0]);
        var a = axes(g, x, y, w, h, 'notice lag (us, from this bin\'s lower edge, log2 bins)', 'KernelCh',
                     function (i) { return tick3(T.lag.bins_lo_us[i]); }, d3.format(',d'));
        var room = 0;
        if (idx.length > 12) { /* many bins: slanted labels, so that they do not run into each other, the x label
                                * below them (it sat on them) */
          room = slantX(a, h);
          growBottom(g, h, m, room);
        }
        g.selectAll('.bar').data(idx).enter().append('rect').attr('x', function (i) { return x(i); })
          .attr('width', x.rangeBand()).attr('y', function (i) { return y(T.lag.counts[i]); })
          .attr('height', function (i) { return h - y(T.lag.counts[i]); }).attr('fill', '#5b7bb4')
          .on('mousemove', function (i) {
            var lo = T.lag.bins_lo_us[i], up = T.lag.bins_lo_us[i + 1];
            showTip(fint(T.lag.counts[i]) + ' KernelCh noticed ' + (up === undefined ? f3(lo) + ' us late or later'
                    : (i === 0 ? 'less than ' : f3(lo) + ' .. ') + f3(up) + ' us late'));
          }).on('mouseout', hideTip);
        return {marks: used.length, values: T.lag.counts, label_clear: labelClear(a)};
      });
    }
    s.append('h3').text('Time starved, and who ran instead');
    if (!T.sched) return none(s, 'starved', 'Not measured: no scheduler trace given (`nccl-lens sched` records one).');
    var th = T.sched.threads.filter(function (t) { return t.wait_ns > 0; });
    if (!th.length) return none(s, 'starved', 'No watched thread waited for a CPU.');
    reading(s, 'per watched thread, the time it was runnable but not running, split by the thread that had its CPU ' +
            '(the culprit).');
    plot('starved', function () {
      th = th.slice(0, 20);
      var bh = 22, w = 600, h = th.length * bh, m = {l: 200, r: 60, t: 6, b: 44};
      var g = frame(s, w, h, m);
      var x = d3.scale.linear().domain([0, d3.max(th, function (t) { return t.wait_ns / 1e6; })]).range([0, w]);
      var y = d3.scale.ordinal().domain(d3.range(th.length)).rangeRoundBands([0, h], 0.15);
      var color = d3.scale.category20();
      g.append('g').attr('class', 'axis').attr('transform', 'translate(0,' + h + ')')
        .call(d3.svg.axis().scale(x).orient('bottom').ticks(6));
      g.append('text').attr('class', 'label').attr('x', w / 2).attr('y', h + 36).attr('text-anchor', 'middle')
        .text('time runnable but not running (ms)');
      var marks = 0;
      th.forEach(function (t, i) {
        var at = 0, rest = t.wait_ns;
        t.culprits.forEach(function (c) {
          var name = c.comm || (c.tid ? '?' : '<idle>');
          g.append('rect').attr('x', x(at / 1e6)).attr('y', y(i)).attr('height', y.rangeBand())
            .attr('width', Math.max(0.5, x(c.wait_ns / 1e6))).attr('fill', color(name))
            .on('mousemove', function () {
              showTip('tid ' + t.host_tid + ' (rank ' + t.proxy_rank + ')\nculprit ' + name + ' pid ' + c.pid + ' tid ' +
                      c.tid + ': ' + f3(c.wait_ns / 1e6) + ' ms in ' + c.waits + ' waits');
            }).on('mouseout', hideTip);
          at += c.wait_ns;
          rest -= c.wait_ns;
          marks++;
        });
        if (rest > 0)
          g.append('rect').attr('x', x(at / 1e6)).attr('y', y(i)).attr('height', y.rangeBand())
            .attr('width', x(rest / 1e6)).attr('fill', '#cccccc');
        g.append('text').attr('class', 'label').attr('x', -6).attr('y', y(i) + y.rangeBand() / 2 + 4)
          .attr('text-anchor', 'end').text('tid ' + t.host_tid + ' (rank ' + t.proxy_rank + ')');
        if (!t.culprits.length) marks++;
      });
      return {marks: marks, values: th.map(function (t) { return t.wait_ns; })};
    });
  }

  /* ---- GPU timing ---- */
  function gpu() {
    var s = section('sec-gpu', 'Can the GPU times be trusted?');
    var G = D.gpu;
    s.append('p').text(G.level ? 'Verdict of nccl-lens validate: ' + G.level + '. ' + G.text
                               : 'The GPU analysis is not built in.');
    var maps = G.clock_maps.slice().sort(function (a, b) { return b.bound_us - a.bound_us; }).slice(0, 48);
    if (!maps.length) {
      none(s, 'clock_maps', 'No GPU clock map: KernelCh times were not mapped to host time.');
    } else {
      reading(s, 'per GPU (the ' + maps.length + ' widest of ' + (G.clock_maps_total || G.clock_maps.length) +
              '), how far a mapped GPU time ' +
              'may be from the true host time (bar: error bound; dot: fit residual). Bounds of a few us mean the ' +
              'GPU and host timelines line up.');
      plot('clock_maps', function () {
        var bw = Math.max(16, Math.min(40, Math.floor(900 / maps.length))), w = bw * maps.length, h = 200;
        var m = {l: 64, r: 20, t: 10, b: 44};
        var g = frame(s, w, h, m);
        var x = d3.scale.ordinal().domain(d3.range(maps.length)).rangeRoundBands([0, w], 0.15);
        var y = d3.scale.linear().domain([0, (d3.max(maps, function (c) { return Math.max(c.bound_us, c.residual_us); }) ||
                                              1) * 1.08]).range([h, 0]);
        /* every bar named by its rank (slanted past 16 bars, they ran into each other) */
        var a = axes(g, x, y, w, h, 'GPU by its rank (widest error bound first)', 'error bound (us)',
                     function (i) { return 'r' + maps[i].rank; }, null);
        if (maps.length > 16) growBottom(g, h, m, slantX(a, h));
        g.selectAll('.bar').data(maps).enter().append('rect').attr('x', function (c, i) { return x(i); })
          .attr('width', x.rangeBand()).attr('y', function (c) { return y(c.bound_us); })
          .attr('height', function (c) { return h - y(c.bound_us); }).attr('fill', '#6a9f58')
          .on('mousemove', function (c) {
            showTip(c.gpu + ' rank ' + c.rank + '\n' + c.source + ', ' + c.points + ' points, slope ' + c.slope +
                    '\nresidual ' + f3(c.residual_us) + ' us, bound ' + f3(c.bound_us) + ' us');
          }).on('mouseout', hideTip);
        g.selectAll('.dot').data(maps).enter().append('circle')
          .attr('cx', function (c, i) { return x(i) + x.rangeBand() / 2; }).attr('cy', function (c) { return y(c.residual_us); })
          .attr('r', 3).attr('fill', '#1d2330');
        return {marks: maps.length, values: maps.map(function (c) { return c.bound_us; }), label_clear: labelClear(a),
                tick_labels: a.xaxis.selectAll('text').size()};
      });
    }
    s.append('h3').text('Flagged channels and events');
    reading(s, 'events the GPU analysis flagged (validate): a timer that may belong to another work item, a lag, ' +
            'a starved poller... Zero everywhere means nothing was flagged.');
    plot('flags', function () {
      var F = G.flags, bh = 18, w = 500, h = F.length * bh, m = {l: 200, r: 60, t: 6, b: 44};
      var g = frame(s, w, h, m);
      var x = d3.scale.linear().domain([0, d3.max(F, function (d) { return d.events; }) || 1]).range([0, w]);
      var y = d3.scale.ordinal().domain(d3.range(F.length)).rangeRoundBands([0, h], 0.15);
      g.append('g').attr('class', 'axis').attr('transform', 'translate(0,' + h + ')')
        .call(d3.svg.axis().scale(x).orient('bottom').ticks(5).tickFormat(d3.format('d')));
      g.append('text').attr('class', 'label').attr('x', w / 2).attr('y', h + 36).attr('text-anchor', 'middle')
        .text('events flagged');
      g.selectAll('.bar').data(F).enter().append('rect').attr('x', 0).attr('y', function (d, i) { return y(i); })
        .attr('height', y.rangeBand()).attr('width', function (d) { return x(d.events); }).attr('fill', '#e69b00')
        .on('mousemove', function (d) { showTip(d.flag + ': ' + fint(d.events) + ' events'); }).on('mouseout', hideTip);
      g.selectAll('.name').data(F).enter().append('text').attr('class', 'label').attr('x', -6)
        .attr('y', function (d, i) { return y(i) + y.rangeBand() / 2 + 4; }).attr('text-anchor', 'end')
        .text(function (d) { return d.flag + ' (' + fint(d.events) + ')'; });
      if (!d3.sum(F, function (d) { return d.events; }))
        g.append('text').attr('class', 'label').attr('x', 10).attr('y', h / 2 + 4).text('no event flagged');
      return {marks: F.length, values: F.map(function (d) { return d.events; })};
    });
  }

  /* ---- hang ---- */
  var stateColor = {stuck: '#c62828', missing: '#e69b00', untraced: '#9aa3b2', passed: '#2e7d32'};
  function hang() {
    var s = section('sec-hang', 'Hang');
    var H = D.hang;
    if (!H) return none(s, 'hang', 'Every collective recorded completed: nothing hung.');
    reading(s, 'per communicator with a collective that never completed, one square per rank: red entered it and ' +
            'is stuck in it, amber never entered it (the one the others wait for), grey has no trace loaded, green ' +
            'got past it. Hover for the last sequence number each rank started and completed.');
    H.comms.forEach(function (c, ci) {
      s.append('h3').text(commLabel(c) + ': ' + (c.func || '?') + ' seq ' + c.seq + ', ' + c.nranks + ' ranks');
      plot('hang_' + ci, function () {
        var cols = Math.min(c.nranks, 32), rows = Math.ceil(c.nranks / cols), sz = c.nranks > 256 ? 12 : 22;
        var w = cols * sz, h = rows * sz, m = {l: 64, r: 20, t: 6, b: 10};
        var g = frame(s, w, h, m);
        var count = {stuck: 0, missing: 0, untraced: 0, passed: 0};
        g.selectAll('.cell').data(c.ranks).enter().append('rect')
          .attr('x', function (r, i) { return (i % cols) * sz; }).attr('y', function (r, i) { return Math.floor(i / cols) * sz; })
          .attr('width', sz - 2).attr('height', sz - 2).attr('fill', function (r) { count[r[0]]++; return stateColor[r[0]]; })
          .on('mousemove', function (r, i) {
            showTip('rank ' + i + ': ' + r[0] + '\nlast ' + (c.func || '') + ' started seq ' + r[1] + ', completed seq ' + r[2] +
                    (frozen[i] ? '\nits proxy froze: rank ' + frozen[i].blocked_rank + ' waits on it (channel ' +
                                 frozen[i].channel + ', step ' + frozen[i].step + ')' : ''));
          }).on('mouseout', hideTip);
        /* a rank whose proxy froze (the verdict names it): a black frame, the one to look at */
        var frozen = {};
        (H.frozen || []).forEach(function (fz) { if (fz.rank >= 0 && fz.rank < c.nranks) frozen[fz.rank] = fz; });
        var nfrozen = 0;
        Object.keys(frozen).forEach(function (r) {
          r = +r;
          nfrozen++;
          g.append('rect').attr('class', 'frozen').attr('x', (r % cols) * sz - 1.5).attr('y', Math.floor(r / cols) * sz - 1.5)
            .attr('width', sz + 1).attr('height', sz + 1).attr('fill', 'none').attr('stroke', '#111')
            .attr('stroke-width', 2.5).style('pointer-events', 'none');
        });
        if (c.nranks <= 64)
          g.selectAll('.num').data(c.ranks).enter().append('text').attr('class', 'label').style('fill', '#fff')
            .style('pointer-events', 'none').attr('text-anchor', 'middle')
            .attr('x', function (r, i) { return (i % cols) * sz + (sz - 2) / 2; })
            .attr('y', function (r, i) { return Math.floor(i / cols) * sz + sz / 2 + 3; })
            .text(function (r, i) { return i; });
        for (var k = 0; k < rows; k++)
          g.append('text').attr('class', 'label').attr('x', -6).attr('y', k * sz + sz / 2 + 3).attr('text-anchor', 'end')
            .text('rank ' + k * cols);
        var keys = [['stuck in it', stateColor.stuck], ['never entered', stateColor.missing],
                    ['no trace', stateColor.untraced], ['got past it', stateColor.passed]];
        if (nfrozen) keys.push(['its proxy froze (see nccl-lens hang)', '#fff', '#111']);
        legend(s, keys);
        if (c.waiting_total > 16 && c.waiting_groups && c.waiting_groups.length) {
          /* at the scale of a job: alike ops on one row with their ranks as ranges, as the text groups them */
          var tg = s.append('table').attr('class', 'inst'), hg = tg.append('tr');
          ['dir', 'step', 'ops', 'ranks'].forEach(function (x) { hg.append('th').text(x); });
          hg.append('th').attr('class', 'l').text('waits for (' + c.waiting_total + ' proxy ops in flight, alike ones ' +
                                                  'on one row)');
          c.waiting_groups.forEach(function (wg) {
            var tr = tg.append('tr');
            [wg.send ? 'send' : 'recv', wg.step, wg.ops, wg.ranks + (wg.n_ranks > 1 ? ' (' + wg.n_ranks + ')' : '')]
              .forEach(function (x) { tr.append('td').text(x); });
            tr.append('td').attr('class', 'l').text(wg.state || '-');
          });
        } else if (c.waiting.length) {
          var t = s.append('table').attr('class', 'inst'), hr = t.append('tr');
          ['rank', 'peer', 'channel', 'dir', 'step'].forEach(function (x) { hr.append('th').text(x); });
          hr.append('th').attr('class', 'l').text('waits for (' + c.waiting_total + ' proxy ops in flight)');
          /* the analysis' first 16, by rank then channel: the two ends of a link read next to each other */
          c.waiting.slice(0, 16).sort(function (a, b) {
            return a.rank - b.rank || a.channel - b.channel || a.send - b.send;
          }).forEach(function (wt) {
            var tr = t.append('tr');
            [wt.rank, wt.peer, wt.channel, wt.send ? 'send' : 'recv', wt.step].forEach(function (x) { tr.append('td').text(x); });
            tr.append('td').attr('class', 'l').text(wt.state || '-');
          });
        }
        return {marks: c.ranks.length, values: count, frozen: Object.keys(frozen).map(Number)};
      });
    });
  }

  function finish() {
    d3.selectAll('svg').each(function () { if (this.querySelector('rect,circle,path,line')) check.svg_nonempty++; });
    d3.selectAll('canvas').each(function () {
      try {
        var c = this, px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        for (var i = 0; i < px.length; i += 4)
          if (px[i] < 240 || px[i + 1] < 240 || px[i + 2] < 240) { check.canvas_nonempty++; return; }
      } catch (e) { errors.push('canvas: ' + e.message); }
    });
    /* plots wider than the window (a canvas keeps its width; html_check renders a narrow window too) */
    var vw = document.documentElement.clientWidth;
    check.page_width = [document.documentElement.scrollWidth, vw]; /* wider than the window: it scrolls sideways */
    check.too_wide = [];
    d3.selectAll('canvas').each(function () {
      var r = this.getBoundingClientRect();
      if (r.right > vw + 0.5) check.too_wide.push(this.parentNode.parentNode.id + ': ' + Math.round(r.right) + ' > ' + vw);
    });
    for (var k in check.plots) delete check.plots[k].canvas;
    check.errors = errors;
    check.ms = Math.round(window.performance.now()); /* page start to drawn, for bench/report_html.sh */
    var pre = document.getElementById('lens-check');
    pre.textContent = JSON.stringify(check);
    pre.setAttribute('data-done', '1');
  }

  if (D) {
    [verdict, hang, waits, busbw, network, threads, gpu].forEach(function (fn) {
      try { fn(); } catch (e) { errors.push(fn.name + ': ' + e.message); }
    });
  }
  finish();
})();
