// Renders scalescope's report document (the JSON in #scalescope-data) with
// ECharts. Every string from the data goes through textContent or the chart
// library's own text drawing (tooltips in richText mode, never HTML), so names
// from traces cannot inject markup.
'use strict';
(function () {
  // Names from traces are shown, never obeyed: bidirectional formatting
  // characters (a right-to-left override turns "evil\u202Etxt.exe" around)
  // become visible escapes, and a name longer than a cell can hold is cut in
  // the middle with an ellipsis, the whole (escaped) name in the tooltip. A
  // 1 MiB kernel name made a table row hundreds of thousands of pixels tall.
  const kMaxCell = 300, kMaxText = 2000;
  const bidi = /[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/g;
  function plain(text) {
    return text.replace(bidi, c => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));
  }
  function capped(text, max) {
    if (text.length <= max) return text;
    const points = Array.from(text);  // whole code points: no half of a surrogate pair
    if (points.length <= max) return text;
    const head = Math.ceil((max - 1) * 0.6), tail = max - 1 - head;
    return points.slice(0, head).join('') + '\u2026' + points.slice(points.length - tail).join('');
  }
  // Every string of the document made plain; in charts (axis labels, legends,
  // tooltips drawn on a canvas) also capped, as they have no tooltip to hold the rest.
  function neutralise(v, max) {
    if (typeof v === 'string') return max ? capped(plain(v), max) : plain(v);
    if (Array.isArray(v)) { for (let i = 0; i < v.length; ++i) v[i] = neutralise(v[i], max); return v; }
    if (v && typeof v === 'object') {
      const inChart = max || (v.type === 'chart' ? kMaxCell : 0);
      for (const k of Object.keys(v)) v[k] = neutralise(v[k], inChart);
    }
    return v;
  }
  const doc = neutralise(JSON.parse(document.getElementById('scalescope-data').textContent), 0);
  const charts = [];  // {id, kind, title, series: [{name, points}]} for tests and humans
  window.__scalescopeCharts = charts;
  const instances = [];
  const palette = ['#2f6fde', '#e08a00', '#2e9d58', '#c62828', '#7b4fc9', '#00838f', '#8d6e63', '#d81b60', '#546e7a', '#9e9d24'];
  const classColours = { compute: '#2f6fde', communication: '#e08a00', memory: '#2e9d58', synchronization: '#c62828',
    copy: '#7b4fc9', memset: '#b39ddb', nccl: '#e08a00', other: '#90a4ae' };

  // An element showing `text` (cut to `max` code points, default kMaxText;
  // the whole text then in its tooltip).
  function el(tag, cls, text, max) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) {
      const whole = String(text);
      const shown = capped(whole, max || kMaxText);
      e.textContent = shown;
      if (shown !== whole) e.title = whole;
    }
    return e;
  }

  function fmtNumber(v, digits) {
    if (v === null || v === undefined) return '';
    if (typeof v !== 'number') return String(v);
    if (!isFinite(v)) return String(v);
    if (Number.isInteger(v)) return v.toLocaleString('en-US');
    const d = digits === undefined ? 3 : digits;
    // Small values keep three significant digits ("0.000426"), never the
    // exponent notation a reader has to decode ("4.26e-4").
    if (Math.abs(v) < 1e-3) return v.toLocaleString('en-US', { maximumSignificantDigits: 3 });
    return v.toLocaleString('en-US', { maximumFractionDigits: d });
  }

  // A duration in ns as the terminal shows it (trace/format_units.cpp):
  // 1.230 ms, 4.500 s, 812 ns.
  function fmtDuration(ns) {
    if (typeof ns !== 'number') return fmtNumber(ns);
    if (!isFinite(ns)) return 'n/a';
    const a = Math.abs(ns);
    if (a >= 1e9) return (ns / 1e9).toFixed(3) + ' s';
    if (a >= 1e6) return (ns / 1e6).toFixed(3) + ' ms';
    if (a >= 1e3) return (ns / 1e3).toFixed(3) + ' us';
    return ns.toFixed(0) + ' ns';
  }

  function withUnit(v, unit) { return unit ? fmtNumber(v) + ' ' + unit : fmtNumber(v); }

  // Axis ticks: at most three significant digits, thousands and up with an SI
  // prefix ("1.5k", "60.7M"); a tick at the axis' end (its data's maximum)
  // read "882.444448".
  const siPrefixes = [[1e12, 'T'], [1e9, 'G'], [1e6, 'M'], [1e3, 'k']];
  function fmtAxis(v) {
    if (typeof v !== 'number' || !isFinite(v)) return String(v);
    if (v === 0) return '0';
    const sig = x => String(Number(x.toPrecision(3)));
    const a = Math.abs(Number(v.toPrecision(3)));
    for (const [f, p] of siPrefixes) if (a >= f) return sig(v / f) + p;
    return sig(v);
  }
  const valueLabels = { formatter: fmtAxis, hideOverlap: true };

  // Legends on as many rows as their names need, never paged: ECharts wraps a
  // plain legend at the chart's width; the plot starts below its last row.
  const legendFont = '12px system-ui, sans-serif';
  let measureContext = null;
  function legendLayout(names, width) {
    if (!names.length) return { legend: undefined, height: 0 };
    measureContext = measureContext || document.createElement('canvas').getContext('2d');
    measureContext.font = legendFont;
    const room = Math.max(width - 20, 100);
    const maxText = room - 40;
    let rows = 1, x = 0;
    for (const name of names) {
      const item = 25 + 5 + Math.min(measureContext.measureText(name).width, maxText) + 10;  // icon, gap, text, item gap
      if (x > 0 && x + item > room) { ++rows; x = 0; }
      x += item;
    }
    return { height: rows * 24 + 4, legend: { type: 'plain', top: 4, left: 10, right: 10, data: names, itemGap: 10,
      textStyle: { fontFamily: 'system-ui, sans-serif', fontSize: 12, width: maxText, overflow: 'break' } } };
  }

  // ---- blocks ---------------------------------------------------------------

  function renderParagraph(block, parent) {
    parent.appendChild(el('p', block.style === 'skipped' ? 'skipped' : (block.style === 'note' ? 'note' : ''), block.text));
  }

  // A long table starts folded: its title and row count on a line that opens it.
  const kFoldRows = 12;
  function renderTable(block, into) {
    let parent = into;
    if (block.rows.length > kFoldRows) {
      parent = el('details', 'fold');
      parent.appendChild(el('summary', '', (block.title || 'Table') + ' (' + block.rows.length.toLocaleString('en-US') + ' rows)'));
      into.appendChild(parent);
    } else if (block.title) parent.appendChild(el('h3', '', block.title));
    const wrap = el('div', 'table-wrap');
    const t = el('table', 'data');
    const head = el('tr');
    const thead = el('thead');
    thead.appendChild(head);
    t.appendChild(thead);
    const body = el('tbody');
    const hidden = block.hidden || [];
    const durations = block.columns.map(c => /_ns$/.test(c));
    const fill = rows => {
      body.textContent = '';
      for (const row of rows) {
        const tr = el('tr');
        row.forEach((cell, i) => {
          if (hidden.includes(i)) return;
          const isNum = typeof cell === 'number';
          const cls = isNum ? 'num' : ((block.name_columns || []).includes(i) ? 'name' : '');
          // Columns named *_ns hold durations in ns, shown as the terminal shows them.
          const shown = isNum ? (durations[i] ? fmtDuration(cell) : fmtNumber(cell)) : (cell === null ? '' : cell);
          const td = el('td', cls, shown, kMaxCell);
          if (durations[i] && isNum) td.title = cell.toLocaleString('en-US') + ' ns';
          // A hidden column is the tooltip of the cell before it (a kernel's full name).
          if (hidden.includes(i + 1) && typeof row[i + 1] === 'string') td.title = row[i + 1];
          tr.appendChild(td);
        });
        body.appendChild(tr);
      }
    };
    // Sortable tables: a click on a header sorts by that column (numbers
    // largest first, text A-Z; a second click reverses); empty cells go last.
    let sortedBy = -1, descending = true;
    block.columns.forEach((c, i) => {
      if (hidden.includes(i)) return;
      const th = el('th', block.sortable ? 'sortable' : '', c);
      if (block.sortable) {
        th.title = 'sort by ' + c;
        th.addEventListener('click', () => {
          descending = sortedBy === i ? !descending : true;
          sortedBy = i;
          const rows = block.rows.slice().sort((a, b) => {
            const x = a[i], y = b[i];
            if (x === null || x === undefined) return 1;
            if (y === null || y === undefined) return -1;
            const order = typeof x === 'number' && typeof y === 'number' ? y - x : String(x).localeCompare(String(y));
            return descending ? order : -order;
          });
          for (const h of head.children) h.classList.remove('sorted');
          th.classList.add('sorted');
          fill(rows);
        });
      }
      head.appendChild(th);
    });
    fill(block.rows);
    t.appendChild(body);
    wrap.appendChild(t);
    parent.appendChild(wrap);
    for (const n of block.notes || []) parent.appendChild(el('p', 'note', n));
  }

  function renderFindings(block, parent) {
    if (!block.items.length) {
      parent.appendChild(el('p', 'skipped', block.empty_text || 'No findings.'));
      return;
    }
    for (const f of block.items) {
      const box = el('div', 'finding ' + (f.severity || 'info'));
      const h = el('h4');
      h.appendChild(el('span', 'badge', f.severity || 'info'));
      h.appendChild(document.createTextNode(capped(f.title, kMaxCell)));
      if (f.title.length > kMaxCell) h.title = f.title;
      box.appendChild(h);
      const dl = el('dl');
      const row = (k, v, cls) => { if (v === undefined || v === null || v === '') return; dl.appendChild(el('dt', '', k)); dl.appendChild(el('dd', cls || '', v)); };
      if (f.explained_by) box.classList.add('explained');
      row('where', f.source);
      if (f.explained_by) row('caused by', f.explained_by + ' (fixing it fixes this)');
      if (f.explains && f.explains.length) row('causes', f.explains.join(', '));
      row('evidence', f.evidence);
      if (f.caveat) row('caution', f.caveat);
      if (typeof f.saving_fraction === 'number' && isFinite(f.saving_fraction))
        row('estimated saving', (f.saving_kind === 'estimate' ? 'about ' : 'up to ') + (100 * f.saving_fraction).toFixed(1) + '% of step time' + (f.saving_method ? ' (' + f.saving_method + ')' : ''), 'saving');
      if (!f.explained_by && f.combined_count > 1 && typeof f.combined_fraction === 'number')
        row('with the causes above', 'fixing the first ' + f.combined_count + ': about ' + (100 * f.combined_fraction).toFixed(1) + '% of step time' + (f.combined_method ? ' (' + f.combined_method + ')' : ''));
      row('fix', f.fix);
      if (f.figures && f.figures.length)
        row('figures', f.figures.map(g => g.name + ' = ' + (g.text || withUnit(g.value, g.unit))).join('; '));
      box.appendChild(dl);
      parent.appendChild(box);
    }
  }

  // ---- charts ---------------------------------------------------------------

  const baseTooltip = { renderMode: 'richText', confine: true };

  function axis(spec, fallbackType) {
    const a = { type: fallbackType, name: spec && spec.name ? spec.name : '', nameLocation: 'middle', nameGap: 32, scale: true,
      axisLabel: valueLabels };
    if (spec && spec.log) { a.type = 'log'; a.logBase = spec.log_base || 2; }
    if (spec && spec.min !== undefined) a.min = spec.min;
    return a;
  }

  // Labelled points (break-even counts): each label goes to the first place
  // above its point, or below it near the top of the plot, that no label
  // already took, joined to its point by a leader line; never above the plot,
  // where the legend is.
  function markLabelLayout(gridTop) {
    const placed = [];
    return params => {
      if (params.dataIndex === 0) placed.length = 0;
      const r = params.labelRect, p = params.rect;
      const cx = p.x + p.width / 2, cy = p.y + p.height / 2;
      const h = r.height + 4;
      const overlaps = y => placed.some(q => r.x < q.x + q.width && q.x < r.x + r.width && y < q.y + q.height && q.y < y + h);
      let y = null;
      for (let k = 0; k < 12 && y === null; ++k) {
        const above = cy - 8 - h - k * h, below = cy + 8 + k * h;
        if (above >= gridTop && !overlaps(above)) y = above;
        else if (!overlaps(below)) y = below;
      }
      if (y === null) y = Math.max(gridTop, cy - 8 - h);
      placed.push({ x: r.x, y, width: r.width, height: h });
      return { dx: cx - (r.x + r.width / 2), dy: y - r.y, hideOverlap: false };
    };
  }

  function xyOption(c, width) {
    const series = [];
    c.series.forEach((s, i) => {
      const colour = s.colour || palette[i % palette.length];
      const base = { name: s.name, data: s.points, itemStyle: { color: colour }, lineStyle: { color: colour } };
      if (s.style === 'points') series.push(Object.assign(base, { type: 'scatter', symbolSize: 8 }));
      else series.push(Object.assign(base, { type: 'line', symbol: s.style === 'line-only' ? 'none' : 'circle', symbolSize: 6,
        showSymbol: s.points.length < 200, sampling: s.points.length > 2000 ? 'lttb' : undefined,
        lineStyle: { color: colour, type: s.style === 'dashed' ? 'dashed' : 'solid', width: s.style === 'dashed' ? 2 : 1.8 } }));
      if (s.errors && s.errors.length) {
        // Error bars: a custom series drawing a vertical segment with caps per point.
        series.push({ name: s.name + ' CI', type: 'custom', data: s.errors, itemStyle: { color: colour }, z: 3,
          tooltip: { show: false },
          renderItem: (params, api) => {
            const lo = api.coord([api.value(0), api.value(1)]);
            const hi = api.coord([api.value(0), api.value(2)]);
            const w = 5;
            const style = { stroke: colour, lineWidth: 1.5 };
            return { type: 'group', children: [
              { type: 'line', shape: { x1: lo[0], y1: lo[1], x2: hi[0], y2: hi[1] }, style },
              { type: 'line', shape: { x1: lo[0] - w, y1: lo[1], x2: lo[0] + w, y2: lo[1] }, style },
              { type: 'line', shape: { x1: hi[0] - w, y1: hi[1], x2: hi[0] + w, y2: hi[1] }, style }] };
          } });
      }
    });
    const marks = c.marks || {};
    if ((marks.x && marks.x.length) || (marks.y && marks.y.length) || (marks.points && marks.points.length)) {
      const lines = [];
      // Inside the plot, along the line: above it is the legend's place.
      for (const m of marks.x || []) lines.push({ xAxis: m.value, name: m.label, label: { formatter: () => m.label, position: 'insideEndTop' } });
      for (const m of marks.y || []) lines.push({ yAxis: m.value, name: m.label, label: { formatter: () => m.label, position: 'insideEndTop' } });
      series.push({ name: 'marks', type: 'line', data: [], silent: true,
        markLine: { symbol: 'none', lineStyle: { type: 'dotted', color: '#555' }, data: lines } });
    }
    const legend = legendLayout(c.series.map(s => s.name), width);
    const gridTop = legend.height + 16;
    if (marks.points && marks.points.length) {
      series.push({ name: 'marked points', type: 'scatter', z: 10, symbol: 'diamond', symbolSize: 10,
        itemStyle: { color: '#c62828' }, tooltip: { formatter: p => p.data.label_text },
        data: marks.points.map(m => ({ value: [m.x, m.y], label_text: m.label })),
        label: { show: true, formatter: p => p.data.label_text, fontSize: 11, color: '#1d2433',
          backgroundColor: 'rgba(255,255,255,0.92)', padding: [1, 3] },
        labelLine: { show: true, lineStyle: { color: '#c62828', width: 1 } },
        labelLayout: markLabelLayout(gridTop) });
    }
    return {
      tooltip: Object.assign({ trigger: 'item' }, baseTooltip),
      legend: legend.legend,
      grid: { left: 70, right: 40, top: gridTop, bottom: 50 },
      xAxis: axis(c.x, 'value'), yAxis: axis(c.y, 'value'), series,
      __extraHeight: legend.height,
    };
  }

  // Small multiples: a panel per metric, stacked, on one shared time axis
  // (zooming one zooms all), the same colour for a series in every panel.
  function panelsOption(c, width) {
    const names = [];
    for (const p of c.panels) for (const s of p.series) if (!names.includes(s.name)) names.push(s.name);
    const legend = legendLayout(names, width);
    const panelHeight = 80, gap = 40, top = legend.height + 30;
    let xMin = Infinity, xMax = -Infinity;
    for (const p of c.panels) for (const s of p.series) for (const pt of s.points) { xMin = Math.min(xMin, pt[0]); xMax = Math.max(xMax, pt[0]); }
    if (!isFinite(xMin)) { xMin = 0; xMax = 1; }
    const grid = [], xAxis = [], yAxis = [], series = [];
    const last = c.panels.length - 1;
    c.panels.forEach((p, i) => {
      grid.push({ left: 70, right: 40, top: top + i * (panelHeight + gap), height: panelHeight });
      xAxis.push({ type: 'value', gridIndex: i, min: xMin, max: xMax, axisLabel: Object.assign({ show: i === last }, valueLabels),
        name: i === last && c.x ? c.x.name : '', nameLocation: 'middle', nameGap: 28 });
      yAxis.push({ type: 'value', gridIndex: i, scale: true, splitNumber: 2, axisLabel: valueLabels, name: p.name,
        nameLocation: 'end', nameGap: 12, nameTextStyle: { align: 'left', fontWeight: 'bold', padding: [0, 0, 0, -60] } });
      for (const s of p.series) {
        const colour = s.colour || palette[names.indexOf(s.name) % palette.length];
        series.push({ name: s.name, type: 'line', xAxisIndex: i, yAxisIndex: i, data: s.points, symbol: 'none',
          sampling: s.points.length > 2000 ? 'lttb' : undefined, itemStyle: { color: colour }, lineStyle: { color: colour, width: 1.5 } });
      }
    });
    const all = c.panels.map((_, i) => i);
    const height = top + c.panels.length * (panelHeight + gap) + 50;
    return {
      tooltip: Object.assign({ trigger: 'axis' }, baseTooltip),
      axisPointer: { link: [{ xAxisIndex: 'all' }] },
      legend: legend.legend, grid, xAxis, yAxis, series,
      dataZoom: [{ type: 'inside', xAxisIndex: all }],
      __height: height,
    };
  }

  function barsOption(c, width) {
    const horizontal = !!c.horizontal;
    const cat = { type: 'category', data: c.categories, axisLabel: { width: horizontal ? 260 : 90, overflow: 'truncate' } };
    const val = { type: 'value', name: c.unit || '', nameLocation: 'middle', nameGap: 30, axisLabel: valueLabels };
    const series = c.series.map((s, i) => ({ name: s.name, type: 'bar', stack: c.stacked ? 'all' : undefined, data: s.values,
      itemStyle: { color: s.colour || palette[i % palette.length] } }));
    const legend = legendLayout(c.series.length > 1 ? c.series.map(s => s.name) : [], width);
    return {
      tooltip: Object.assign({ trigger: 'axis', axisPointer: { type: 'shadow' } }, baseTooltip),
      legend: legend.legend, grid: { left: horizontal ? 280 : 70, right: 30, top: legend.height + 16, bottom: 50 },
      __extraHeight: legend.height,
      xAxis: horizontal ? val : cat, yAxis: horizontal ? Object.assign(cat, { inverse: true }) : val, series,
      dataZoom: c.categories.length > 40 ? [{ type: 'slider', [horizontal ? 'yAxisIndex' : 'xAxisIndex']: 0 }] : undefined,
    };
  }

  function boxplotOption(c) {
    return {
      tooltip: Object.assign({ trigger: 'item' }, baseTooltip),
      grid: { left: 70, right: 30, top: 30, bottom: 50 },
      xAxis: { type: 'category', data: c.categories },
      yAxis: { type: 'value', name: c.unit || '', scale: true, axisLabel: valueLabels },
      series: [{ name: c.series_name || 'distribution', type: 'boxplot', data: c.boxes, itemStyle: { color: '#e3ecfb', borderColor: '#2f6fde' } },
        { name: 'outliers', type: 'scatter', data: c.outliers || [], symbolSize: 5, itemStyle: { color: '#c62828' } }],
    };
  }

  // One steady-state iteration: one row per (rank, stream), one rectangle per
  // event; custom series so tens of thousands of rectangles stay fast.
  function timelineOption(c, width) {
    const lanes = c.lanes;
    const byClass = c.classes.map(() => []);
    for (const it of c.items) byClass[it[3]].push(it);
    const series = c.classes.map((cls, k) => ({
      name: cls, type: 'custom', data: byClass[k], encode: { x: [1, 2], y: 0 },
      itemStyle: { color: classColours[cls] || palette[k % palette.length] },
      renderItem: (params, api) => {
        const lane = api.value(0);
        const a = api.coord([api.value(1), lane]);
        const b = api.coord([api.value(2), lane]);
        const h = api.size([0, 1])[1] * 0.7;
        const rect = echarts.graphic.clipRectByRect({ x: a[0], y: a[1] - h / 2, width: Math.max(b[0] - a[0], 0.6), height: h },
          { x: params.coordSys.x, y: params.coordSys.y, width: params.coordSys.width, height: params.coordSys.height });
        return rect && { type: 'rect', shape: rect, style: api.style() };
      },
      tooltip: { formatter: p => c.names[p.value[4]] + '\n' + cls + ', ' + fmtNumber(p.value[2] - p.value[1]) + ' ' + c.unit },
    }));
    const legend = legendLayout(c.classes, width);
    return {
      tooltip: Object.assign({ trigger: 'item' }, baseTooltip),
      legend: legend.legend,
      grid: { left: 150, right: 30, top: legend.height + 16, bottom: 70 },
      __extraHeight: legend.height,
      xAxis: { type: 'value', name: 'time in iteration (' + c.unit + ')', nameLocation: 'middle', nameGap: 28, min: 0, max: c.span,
        axisLabel: valueLabels },
      yAxis: { type: 'category', data: lanes, inverse: true, axisLabel: { width: 140, overflow: 'truncate' } },
      dataZoom: [{ type: 'slider', xAxisIndex: 0, filterMode: 'weakFilter', bottom: 10 },
        { type: 'inside', xAxisIndex: 0, filterMode: 'weakFilter' },
        { type: 'slider', yAxisIndex: 0, right: 0, width: 14, show: lanes.length > 16 }],
      series,
    };
  }

  // Effects of changes: one row per comparison, the ratio as a point and its
  // confidence interval as a bar, on a log axis with the no-effect line at 1.
  function forestOption(c) {
    const stateColours = { slower: '#e08a00', faster: '#2e9d58', same: '#90a4ae', untested: '#7b4fc9' };
    const pts = c.points.map((p, i) => ({ value: [p.value, i], itemStyle: { color: stateColours[p.state] || '#2f6fde' } }));
    const cis = c.points.map((p, i) => [p.low, p.high, i]).filter(e => e[0] !== null && e[1] !== null);
    const values = c.points.flatMap(p => [p.value, p.low, p.high]).filter(v => typeof v === 'number' && v > 0);
    const lo = Math.min(1, ...values), hi = Math.max(1, ...values);
    return {
      tooltip: Object.assign({ trigger: 'item' }, baseTooltip),
      grid: { left: 330, right: 40, top: 20, bottom: 50 },
      xAxis: { type: 'log', logBase: 2, min: lo / 1.15, max: hi * 1.15, name: (c.x && c.x.name) || '', nameLocation: 'middle',
        nameGap: 30, axisLabel: valueLabels },
      yAxis: { type: 'category', data: c.categories, inverse: true, axisLabel: { width: 310, overflow: 'truncate' } },
      series: [
        { name: 'CI', type: 'custom', data: cis, z: 2, tooltip: { show: false },
          renderItem: (params, api) => {
            const a = api.coord([api.value(0), api.value(2)]);
            const b = api.coord([api.value(1), api.value(2)]);
            const style = { stroke: '#455a64', lineWidth: 1.5 };
            return { type: 'group', children: [
              { type: 'line', shape: { x1: a[0], y1: a[1], x2: b[0], y2: b[1] }, style },
              { type: 'line', shape: { x1: a[0], y1: a[1] - 5, x2: a[0], y2: a[1] + 5 }, style },
              { type: 'line', shape: { x1: b[0], y1: b[1] - 5, x2: b[0], y2: b[1] + 5 }, style }] };
          } },
        { name: 'ratio', type: 'scatter', data: pts, symbolSize: 10, z: 3,
          tooltip: { formatter: p => c.categories[p.value[1]] + '\nratio ' + fmtNumber(p.value[0]) },
          markLine: { symbol: 'none', silent: true, lineStyle: { type: 'dashed', color: '#555' }, data: [{ xAxis: 1 }],
            label: { formatter: () => 'no effect', position: 'start' } } },
      ],
    };
  }

  // An icicle (a flame graph upside down): nodes [parent, name, kind, value,
  // self, kernels], parents first; each node's children share its width in
  // proportion to their values, largest first. A click zooms into a node.
  function icicleOption(c) {
    const n = c.nodes.length;
    const children = c.nodes.map(() => []);
    const depth = new Array(n).fill(0);
    c.nodes.forEach((node, i) => { if (node[0] >= 0) { children[node[0]].push(i); depth[i] = depth[node[0]] + 1; } });
    for (const ch of children) ch.sort((a, b) => c.nodes[b][3] - c.nodes[a][3]);
    const x0 = new Array(n).fill(0);
    const order = [];
    for (let i = 0; i < n; ++i) {
      if (c.nodes[i][0] >= 0) continue;
      const stack = [i];
      while (stack.length) {
        const v = stack.pop();
        order.push(v);
        let x = x0[v];
        for (const w of children[v]) { x0[w] = x; x += c.nodes[w][3]; }
        for (let k = children[v].length - 1; k >= 0; --k) stack.push(children[v][k]);
      }
    }
    const kindColours = { operator: '#2f6fde', module: '#2e9d58', range: '#e08a00', backward: '#7b4fc9' };
    const total = n ? Math.max(...c.nodes.filter(x => x[0] < 0).map(x => x[3]), 1e-12) : 1;
    const maxDepth = Math.max(0, ...depth);
    const data = order.map(i => ({ value: [x0[i], x0[i] + c.nodes[i][3], depth[i], i],
      itemStyle: { color: depth[i] === 0 ? '#90a4ae' : (kindColours[c.nodes[i][2]] || '#2f6fde') } }));
    return {
      tooltip: Object.assign({ trigger: 'item', formatter: p => {
        const node = c.nodes[p.value[3]];
        return node[1] + ' (' + node[2] + ')\n' + fmtNumber(node[3]) + ' ' + c.unit + ' (' + fmtNumber(100 * node[3] / total, 1) +
          '% of GPU busy time), self ' + fmtNumber(node[4]) + ' ' + c.unit + ', ' + node[5] + ' kernels';
      } }, baseTooltip),
      grid: { left: 10, right: 10, top: 10, bottom: 52 },
      xAxis: { type: 'value', min: 0, max: total, name: 'GPU time (' + c.unit + ')', nameLocation: 'middle', nameGap: 22,
        axisLabel: valueLabels },
      yAxis: { type: 'value', min: 0, max: maxDepth + 1, inverse: true, show: false },
      dataZoom: [{ type: 'inside', xAxisIndex: 0, filterMode: 'weakFilter' }, { type: 'slider', xAxisIndex: 0, height: 12, bottom: 4 }],
      series: [{ name: 'GPU time', type: 'custom', data, encode: { x: [0, 1], y: 2 },
        renderItem: (params, api) => {
          const a = api.coord([api.value(0), api.value(2)]);
          const b = api.coord([api.value(1), api.value(2) + 1]);
          const rect = echarts.graphic.clipRectByRect({ x: a[0], y: a[1], width: Math.max(b[0] - a[0], 0.5), height: b[1] - a[1] - 1 },
            { x: params.coordSys.x, y: params.coordSys.y, width: params.coordSys.width, height: params.coordSys.height });
          if (!rect) return null;
          // The name cut to the box with an ellipsis (the whole name in the
          // tooltip); none in a box too small to show a few letters.
          const fits = rect.width > 40 && rect.height >= 13;
          return { type: 'rect', shape: rect, style: api.style(),
            textContent: fits ? { style: { text: c.nodes[api.value(3)][1], fill: '#fff', fontSize: 11,
              width: rect.width - 8, overflow: 'truncate', ellipsis: '\u2026' } } : undefined,
            textConfig: fits ? { position: 'insideLeft', distance: 4 } : undefined };
        } }],
    };
  }

  const builders = { xy: xyOption, bars: barsOption, boxplot: boxplotOption, timeline: timelineOption, forest: forestOption,
    icicle: icicleOption, panels: panelsOption };

  function seriesSummary(c) {
    switch (c.kind) {
      case 'xy': return c.series.map(s => ({ name: s.name, points: s.points.length }));
      case 'bars': return c.series.map(s => ({ name: s.name, points: s.values.filter(v => v !== null).length }));
      case 'boxplot': return [{ name: c.series_name || 'distribution', points: c.boxes.length }];
      case 'timeline': return [{ name: 'events', points: c.items.length }];
      case 'forest': return [{ name: 'ratio', points: c.points.length }];
      case 'icicle': return [{ name: 'nodes', points: c.nodes.length }];
      case 'panels': return c.panels.flatMap(p => p.series.map(s => ({ name: p.name + ': ' + s.name, points: s.points.length })));
      default: return [];
    }
  }

  // The option is built for the chart's width (legend rows, label places),
  // so a chart is redrawn from its block whenever its width changes.
  function drawChart(chart, block, div) {
    const option = builders[block.kind](block, div.clientWidth);
    // Room for a legend of several rows, or the figure's own height (small multiples).
    div.style.height = '';
    if (option.__height) div.style.height = option.__height + 'px';
    else if (option.__extraHeight > 28) div.style.height = (div.clientHeight + option.__extraHeight - 28) + 'px';
    delete option.__height;
    delete option.__extraHeight;
    chart.resize();
    chart.setOption(Object.assign({ animation: false, textStyle: { fontFamily: 'system-ui, sans-serif' } }, option), true);
  }
  function redraw(chart) {
    const div = chart.getDom();
    if (div.getClientRects().length && chart.getWidth() !== div.clientWidth) drawChart(chart, blocks.get(chart), div);
  }
  const blocks = new Map();  // chart -> its block

  function renderChart(block, parent) {
    if (block.title) parent.appendChild(el('h3', '', block.title));
    const div = el('div', 'chart' + (block.tall ? ' tall' : ''));
    div.id = 'chart-' + charts.length;
    parent.appendChild(div);
    for (const n of block.notes || []) parent.appendChild(el('p', 'note', n));
    if (!builders[block.kind]) throw new Error('unknown chart kind ' + block.kind);
    const chart = echarts.init(div, null, { renderer: 'canvas' });
    drawChart(chart, block, div);
    if (block.kind === 'icicle') {
      // Zoom into the clicked node: its width fills the chart.
      chart.on('click', p => chart.dispatchAction({ type: 'dataZoom', startValue: p.value[0], endValue: p.value[1] }));
    }
    instances.push(chart);
    blocks.set(chart, block);
    charts.push({ id: div.id, kind: block.kind, title: block.title || '', width: chart.getWidth(), height: chart.getHeight(),
      series: seriesSummary(block) });
  }

  // Text whose lines matter (an environment dump): preformatted, as text.
  function renderPre(block, parent) {
    if (block.title) parent.appendChild(el('h3', '', block.title));
    parent.appendChild(el('pre', 'pre', block.text, Infinity));
  }

  // A tall section shows its first screen and folds the rest under one line
  // that says what it holds, so the page opens as an overview. Charts are
  // drawn before the fold (ECharts cannot size a chart inside a closed
  // <details>) and redrawn on opening if the page's width changed meanwhile.
  const kSectionShown = 800, kFoldAtLeast = 400;  // px: one screen shown; a fold worth a click
  function foldTallSections() {
    for (const sec of document.querySelectorAll('section.report-section')) {
      const blocks = [...sec.children].filter(c => c.classList.contains('block'));
      const top = sec.getBoundingClientRect().top;
      const cut = blocks.findIndex((b, i) => i > 0 && b.getBoundingClientRect().top - top > kSectionShown);
      if (cut < 0) continue;
      const rest = blocks.slice(cut);
      if (sec.getBoundingClientRect().bottom - rest[0].getBoundingClientRect().top < kFoldAtLeast) continue;
      const count = (sel, one, many) => {
        const n = rest.reduce((a, b) => a + b.querySelectorAll(sel).length, 0);
        return n ? n + ' ' + (n === 1 ? one : many) : '';
      };
      const what = [count('.chart', 'chart', 'charts'), count('table.data', 'table', 'tables')].filter(Boolean);
      const more = el('details', 'more');
      more.appendChild(el('summary', '', 'More in this section' + (what.length ? ': ' + what.join(', ') : '')));
      sec.insertBefore(more, rest[0]);
      for (const b of rest) more.appendChild(b);
      more.addEventListener('toggle', () => {
        if (!more.open) return;
        for (const div of more.querySelectorAll('.chart')) redraw(echarts.getInstanceByDom(div));
      });
    }
  }
  // Printed, the page shows everything.
  window.addEventListener('beforeprint', () => { for (const d of document.querySelectorAll('details')) d.open = true; });

  const renderers = { paragraph: renderParagraph, table: renderTable, findings: renderFindings, chart: renderChart,
    pre: renderPre };

  // ---- page -----------------------------------------------------------------

  document.title = doc.title;
  document.getElementById('report-title').textContent = doc.title;
  const meta = [];
  if (doc.generator) meta.push('made by ' + doc.generator);
  if (doc.created) meta.push(doc.created);
  if (doc.inputs && doc.inputs.length) meta.push('inputs: ' + doc.inputs.map(i => i.path + ' (' + i.kind + ')').join(', '));
  document.getElementById('report-meta').textContent = meta.join(' · ');
  const toc = document.getElementById('toc');
  const main = document.getElementById('sections');
  doc.sections.forEach((s, i) => {
    const id = 'section-' + i;
    const a = el('a', '', s.title);
    a.href = '#' + id;
    toc.appendChild(a);
    const sec = el('section', 'report-section');
    sec.id = id;
    sec.appendChild(el('h2', '', s.title));
    if (s.subtitle) sec.appendChild(el('p', 'subtitle', s.subtitle));
    // In the document before any chart is made: ECharts sizes itself from the laid-out element.
    main.appendChild(sec);
    for (const b of s.blocks) {
      const r = renderers[b.type];
      if (!r) throw new Error('unknown block type ' + b.type);
      const box = el('div', 'block');
      sec.appendChild(box);
      r(b, box);
    }
  });
  foldTallSections();
  document.getElementById('report-footer').textContent =
    'Charts: Apache ECharts ' + (echarts.version || '') + ', bundled into this file; the page makes no network request.';
  // Charts take their width from the page; only a change of width redraws
  // them (from their blocks, so legends and labels fit the new width), once
  // the resizing has settled. A full-page screenshot grows the
  // window's height for the capture: redrawing every chart then (dozens, each
  // a canvas the height of the page's share) is what made the capture fail
  // under load.
  let lastWidth = window.innerWidth, resizeTimer = null;
  window.addEventListener('resize', () => {
    if (window.innerWidth === lastWidth) return;
    lastWidth = window.innerWidth;
    clearTimeout(resizeTimer);
    // Charts inside a closed fold wait for it to open (a hidden chart has no width).
    resizeTimer = setTimeout(() => instances.forEach(redraw), 150);
  });
  window.__scalescopeReady = true;
})();
