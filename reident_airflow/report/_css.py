"""The report's stylesheet, inlined into every report (no request to any other host).

Fonts are the reader's own (system font stack): nothing is downloaded. The colours match the
charts' palette (:mod:`reident_airflow.report.charts`).
"""

from __future__ import annotations

__all__ = ["CSS"]

CSS = """
:root {
  --ink: #1f2933; --muted: #616e7c; --line: #e4e7eb; --bg: #f5f7fa; --card: #ffffff;
  --ok: #2e7d32; --ok-bg: #e8f5e9; --bad: #c0392b; --bad-bg: #fdecea;
  --warn: #9a6700; --warn-bg: #fff4e0; --none: #52606d; --none-bg: #eef1f4; --accent: #3b7ea1;
}
* { box-sizing: border-box; }
html { background: var(--bg); }
body {
  margin: 0; color: var(--ink); background: var(--bg);
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", Arial, sans-serif;
}
main { max-width: 1000px; margin: 0 auto; padding: 28px 24px 40px; }
header.report-head { margin-bottom: 18px; }
header.report-head h1 { font-size: 26px; margin: 0 0 4px; letter-spacing: -0.01em; }
header.report-head .sub { color: var(--muted); margin: 0; }
h2 {
  font-size: 19px; margin: 0 0 12px; padding-bottom: 6px; border-bottom: 1px solid var(--line);
}
h3 { font-size: 16px; margin: 18px 0 8px; }
section.card {
  background: var(--card); border: 1px solid var(--line); border-radius: 10px;
  padding: 18px 22px; margin: 0 0 18px; box-shadow: 0 1px 2px rgba(31, 41, 51, 0.05);
}
section.part { margin: 28px 0 0; }
section.part > h2.part-title {
  font-size: 22px; border: none; margin: 0 0 10px; padding: 0 0 0 10px;
  border-left: 4px solid var(--accent);
}
p.lead { color: var(--muted); margin: 0 0 12px; }
.verdict {
  border-radius: 10px; padding: 18px 22px; margin: 0 0 18px; border: 1px solid transparent;
  display: flex; gap: 18px; align-items: center; flex-wrap: wrap;
}
.verdict .word {
  font-size: 30px; font-weight: 800; letter-spacing: 0.04em; padding: 4px 14px;
  border-radius: 8px; color: #fff;
}
.verdict .why { flex: 1 1 420px; font-size: 15.5px; }
.verdict .why ul { margin: 6px 0 0; padding-left: 20px; }
.verdict .why a { color: inherit; }
.verdict.passed { background: var(--ok-bg); border-color: #b7dfb9; }
.verdict.passed .word { background: var(--ok); }
.verdict.breached { background: var(--bad-bg); border-color: #f3b8b0; }
.verdict.breached .word { background: var(--bad); }
.verdict.unknown { background: var(--warn-bg); border-color: #f1d19b; }
.verdict.unknown .word { background: var(--warn); }
.verdict.ungated { background: var(--none-bg); border-color: #d3d9df; }
.verdict.warned { background: var(--warn-bg); border-color: #f1d19b; }
.verdict.warned .word { background: var(--warn); }
.verdict.ungated .word { background: var(--none); }
table { border-collapse: collapse; width: 100%; margin: 6px 0 10px; font-size: 14px; }
th, td { text-align: left; padding: 6px 10px; border-bottom: 1px solid var(--line); }
th { color: var(--muted); font-weight: 600; font-size: 12.5px; text-transform: uppercase;
     letter-spacing: 0.03em; background: #fafbfc; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.num { white-space: nowrap; }
tr.chosen td { background: #eaf3f8; font-weight: 600; }
tr.breach td { background: var(--bad-bg); }
tr.warned td { background: var(--warn-bg); }
.badge {
  display: inline-block; padding: 1px 8px; border-radius: 999px; font-size: 12px;
  font-weight: 700; letter-spacing: 0.03em; white-space: nowrap;
}
.badge.ok { background: var(--ok-bg); color: var(--ok); border: 1px solid #b7dfb9; }
.badge.bad { background: var(--bad-bg); color: var(--bad); border: 1px solid #f3b8b0; }
.badge.unknown, .badge.warn {
  background: var(--warn-bg); color: var(--warn); border: 1px solid #f1d19b;
}
.badge.none { background: var(--none-bg); color: var(--none); border: 1px solid #d3d9df; }
.badge.info { background: #eaf3f8; color: var(--accent); border: 1px solid #c3dbe8; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(170px, 1fr));
         gap: 10px; margin: 4px 0 6px; }
.cards .fig { border: 1px solid var(--line); border-radius: 8px; padding: 10px 12px;
              background: #fbfcfd; }
.cards .fig .v { font-size: 21px; font-weight: 700; font-variant-numeric: tabular-nums; }
.cards .fig .k { color: var(--muted); font-size: 12.5px; }
figure.chart { margin: 8px 0 6px; }
figure.chart .chart-box { overflow-x: auto; }
/* each chart is drawn twice (charts.py): 576 pt wide for this page, 288 pt wide for a phone;
   either fits its box (width 100 %, nothing cut) with its smallest text (8 pt) at 9.4 px or
   more: the wide one from 680 px on, the narrow one (shown up to 760 px) from 330 px on */
figure.chart svg.chart { width: 100%; max-width: 100%; height: auto; display: block; }
figure.chart svg.chart.wide { min-width: 680px; }
figure.chart svg.chart.narrow { display: none; }
figure.chart figcaption { color: var(--muted); font-size: 13px; margin-top: 4px; }
details { margin: 4px 0 8px; }
details > summary { cursor: pointer; color: var(--accent); font-size: 13.5px; }
p.na {
  background: var(--warn-bg); border: 1px solid #f1d19b; color: #6b4a00; border-radius: 8px;
  padding: 10px 14px; margin: 8px 0;
}
p.note { color: var(--muted); font-size: 13.5px; margin: 6px 0; }
code, .mono { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace;
              font-size: 0.92em; }
dl.inputs { display: grid; grid-template-columns: max-content 1fr; gap: 4px 18px; margin: 0; }
dl.inputs dt { color: var(--muted); }
dl.inputs dd { margin: 0; overflow-wrap: anywhere; }
nav.toc { font-size: 13.5px; margin: 0 0 16px; color: var(--muted); }
nav.toc a { color: var(--accent); text-decoration: none; margin-right: 12px; }
footer { color: var(--muted); font-size: 12.5px; text-align: center; margin-top: 24px; }
td code, dd { overflow-wrap: anywhere; }
.sign-off .fields { display: grid; grid-template-columns: repeat(2, minmax(0, 1fr));
                    gap: 14px 24px; margin-top: 8px; }
.sign-off .field { display: flex; align-items: flex-end; gap: 10px; min-width: 0; }
.sign-off .field.wide { grid-column: 1 / -1; }
.sign-off .label { color: var(--muted); font-size: 13px; flex: 0 0 6.5em; }
.sign-off .field.decision { align-items: flex-start; }
.sign-off .line { flex: 1 1 auto; min-height: 1.7em; border-bottom: 1px solid var(--ink);
                  padding: 0 4px; overflow-wrap: anywhere; }
.sign-off .choices { display: flex; flex-wrap: wrap; gap: 6px 20px; }
.sign-off .tick { font-size: 18px; line-height: 1; }
.sr { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); }
/* narrow screens (phones, split windows): every table reflows into one block per row, each
   cell under its column's name, so no column is cut off at the right edge */
@media screen and (max-width: 760px) {
  body { font-size: 14.5px; }
  main { padding: 16px 10px 28px; }
  section.card { padding: 14px 12px; }
  .verdict { padding: 14px 12px; }
  .verdict .word { font-size: 24px; }
  .verdict .why { flex-basis: 100%; }
  .cards { grid-template-columns: repeat(2, minmax(0, 1fr)); }
  figure.chart svg.chart.wide { display: none; }
  figure.chart svg.chart.narrow { display: block; max-width: 560px; }
  table, tbody, tr, td { display: block; width: 100%; }
  table thead { display: none; }
  tbody tr { border: 1px solid var(--line); border-radius: 8px; margin: 0 0 8px;
             padding: 4px 0; }
  td { display: flex; justify-content: space-between; align-items: baseline; gap: 12px;
       border-bottom: none; padding: 3px 10px; text-align: right; white-space: normal; }
  td:first-child { display: block; text-align: left; font-weight: 600; }
  td:not(:first-child)::before {
    content: attr(data-label); color: var(--muted); font-size: 12.5px; text-align: left;
    flex: 0 0 auto;
  }
  td.num { white-space: normal; }
  dl.inputs { grid-template-columns: 1fr; gap: 0; }
  .sign-off .fields { grid-template-columns: 1fr; }
  dl.inputs dd { margin: 0 0 6px; }
}
@media print {
  html, body { background: #fff; }
  main { max-width: none; padding: 0; }
  section.card, .verdict, tr, figure.chart { box-shadow: none; break-inside: avoid-page; }
  figure.chart .chart-box { overflow: visible; }
  figure.chart svg.chart { min-width: 0; }
  figure.chart svg.chart.wide { display: block; min-width: 0; }
  figure.chart svg.chart.narrow { display: none; }
  table { font-size: 12px; }
  th, td { padding: 4px 6px; }
  nav.toc { display: none; }
  a { color: inherit; text-decoration: none; }
  .verdict, .badge, tr.breach td, tr.warned td {
    print-color-adjust: exact; -webkit-print-color-adjust: exact;
  }
}
"""
