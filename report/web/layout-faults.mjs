// Layout faults a reader sees on the report: run inside the page
// (page.evaluate(layoutFaults)); returns one line per fault, [] when clean.
//  - text wider than its HTML box (a cell, a heading, a finding's row);
//  - chart text cut by the chart's edge, a label outside the box it names
//    (a label inside a rectangle: icicle boxes, bars), two chart labels over
//    each other;
//  - value axes whose ticks show more than three significant digits
//    ("882.444448"), and numbers in exponent notation or raw nanoseconds
//    ("4.26e-4", "60,702,501.55 ns") in table cells, finding rows and charts.
// Chart text is read from the chart library's scene (zrender), where the
// canvas was drawn from: every visible text element and its box on screen.
// Folded sections (<details>) are judged as opened: the caller opens them.
export function layoutFaults() {
  const faults = [];
  const short = s => (s.length > 70 ? s.slice(0, 67) + '...' : s).replace(/\n/g, ' ');

  // ---- HTML text --------------------------------------------------------------
  for (const e of document.querySelectorAll('td, th, dt, dd, p, h1, h2, h3, h4, summary, #toc a')) {
    if (!e.getClientRects().length) continue;  // not laid out (inside a closed <details>)
    const style = getComputedStyle(e);
    if (style.overflowX === 'auto' || style.overflowX === 'scroll') continue;
    if (e.scrollWidth > e.clientWidth + 1)
      faults.push(`text wider than its box: <${e.tagName.toLowerCase()}> "${short(e.textContent)}" ` +
        `(${e.scrollWidth} px in ${e.clientWidth} px)`);
  }
  // Figures: table cells, a finding's rows and chart text (below). A fitted
  // formula in a note keeps its coefficients as `scaling` prints them.
  const rawNumbers = (where, text) => {
    for (const m of text.matchAll(/\b\d+(\.\d+)?e[-+]?\d+\b/g))
      faults.push(`${where}: a number in exponent notation: "${short(text.slice(Math.max(0, m.index - 30), m.index + 30))}"`);
    for (const m of text.matchAll(/\b\d{1,3}(,\d{3})+(\.\d+)? ns\b/g)) faults.push(`${where}: raw nanoseconds: "${m[0]}"`);
  };
  for (const e of document.querySelectorAll('td, dd')) if (e.getClientRects().length) rawNumbers(`<${e.tagName.toLowerCase()}>`, e.textContent);

  // ---- charts -----------------------------------------------------------------
  const hidden = el => { for (let x = el; x; x = x.parent || x.__hostTarget) if (x.ignore || x.invisible) return true; return false; };
  const boxOf = el => {
    const r = el.getBoundingRect().clone();
    if (el.transform) r.applyTransform(el.transform);
    return r;
  };
  const significant = label => {
    const s = label.replace(/[kMGT%]$/, '').replace(/,/g, '').replace(/^-/, '');
    if (!/^\d*\.?\d+$/.test(s)) return 0;
    const digits = s.replace('.', '').replace(/^0+/, '');
    return (s.includes('.') ? digits : digits.replace(/0+$/, '')).length;
  };
  for (const div of document.querySelectorAll('.chart')) {
    const chart = echarts.getInstanceByDom(div);
    if (!chart) continue;
    let heading = div.previousElementSibling;
    while (heading && heading.tagName !== 'H3') heading = heading.previousElementSibling;
    const name = `chart "${heading ? heading.textContent : div.id}"`;
    const width = chart.getWidth(), height = chart.getHeight();
    const texts = new Set();
    for (const d of chart.getZr().storage.getDisplayList(true))
      if (d.parent && d.parent.type === 'text' && !hidden(d.parent) && String(d.parent.style.text || '').trim()) texts.add(d.parent);
    const boxes = [...texts].map(t => ({ t, text: String(t.style.text), box: boxOf(t) }));
    for (const { t, text: label, box } of boxes) {
      rawNumbers(name, label);
      if (box.x < -1 || box.y < -1 || box.x + box.width > width + 1 || box.y + box.height > height + 1)
        faults.push(`${name}: "${short(label)}" cut by the chart's edge`);
      const host = t.__hostTarget;
      if (host && host.type === 'rect' && host.textConfig && /^inside/.test(host.textConfig.position || '')) {
        const h = boxOf(host);
        if (box.x < h.x - 1 || box.x + box.width > h.x + h.width + 1)
          faults.push(`${name}: "${short(label)}" wider than its box (${Math.round(box.width)} px in ${Math.round(h.width)} px)`);
      }
    }
    for (let i = 0; i < boxes.length; ++i)
      for (let j = i + 1; j < boxes.length; ++j) {
        const a = boxes[i].box, b = boxes[j].box;
        const w = Math.min(a.x + a.width, b.x + b.width) - Math.max(a.x, b.x);
        const h = Math.min(a.y + a.height, b.y + b.height) - Math.max(a.y, b.y);
        if (w > 2 && h > 2) faults.push(`${name}: "${short(boxes[i].text)}" overlaps "${short(boxes[j].text)}"`);
      }
    // Ticks of value axes: the axis views' own labels.
    for (const view of chart._componentsViews || []) {
      const model = view && view.__model;
      if (!model || !/Axis$/.test(model.mainType) || !['value', 'log'].includes(model.get('type'))) continue;
      view.group.traverse(el => {
        if (el.type !== 'text' || hidden(el)) return;
        const label = String(el.style.text || '');
        if (label === model.get('name')) return;
        if (significant(label) > 3) faults.push(`${name}: axis tick "${label}" shows more than 3 significant digits`);
      });
    }
  }
  return faults;
}
