"""The report's charts, drawn with matplotlib and returned as inline SVG text.

matplotlib is imported here, lazily, inside :func:`_matplotlib` (the engine and the rest of the
package never import it). The figures are built with the object-oriented API
(:class:`matplotlib.figure.Figure`, no ``pyplot``: no global figure registry, no GUI backend,
nothing that depends on the process's backend choice) and saved with the SVG backend.

Text is written as paths (``svg.fonttype = "path"``), with matplotlib's bundled DejaVu Sans:
the SVG references no font, so a browser makes no font request and every reader sees the same
glyphs. Math text is off (``text.parse_math = False``): a ``$`` in a column name is text.
Each chart's element ids are prefixed with its own name, so several charts can be inlined in
one HTML document without clashing ids, and ``svg.hashsalt`` is fixed so that the same data
gives the same SVG.

Each chart is drawn twice (:func:`_responsive`): :data:`WIDTH_IN` wide for a page wider than
760 px, and :data:`NARROW_WIDTH_IN` wide for a phone, which the page's CSS shows instead
(``svg.chart.wide`` / ``svg.chart.narrow``). Scaled to a phone's width (a 390 px screen
leaves about 345 px), the wide drawing's smallest text (8 pt of 576) would be under 5 px, and
unscaled it is cut at the screen's edge; the narrow one (8 pt of 288) stays at 9.5 px or more.
"""

from __future__ import annotations

import functools
import io
import math
import re
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, ParamSpec

from reident_airflow.engine.errors import InvalidInputError

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "ChartUnavailableError",
    "attribute_chart",
    "class_size_chart",
    "datafly_steps_chart",
    "direct_match_chart",
    "risk_distribution_chart",
]

# Palette (also used by the CSS): calm blue for records within the limits, red for at risk.
INK = "#1f2933"
MUTED = "#616e7c"
GRID = "#e4e7eb"
SAFE = "#3b7ea1"
RISK = "#c0392b"
PARTLY = "#e09f3e"
SECOND = "#9fb3c8"

WIDTH_IN = 8.0  # figure width in inches; the CSS scales the SVG to the page width
#: The width of the drawing shown on narrow screens (``@media (max-width: 760px)``).
NARROW_WIDTH_IN = 4.0
#: The longest label (characters) of each drawing; longer ones end in an ellipsis.
_LABEL_LIMITS = {"wide": 42, "narrow": 20}
#: Which drawing is being made: ``"wide"`` or ``"narrow"`` (set by :func:`_responsive`).
_VARIANT: ContextVar[str] = ContextVar("reident_chart_variant", default="wide")
_P = ParamSpec("_P")


def _responsive(draw: Callable[_P, str]) -> Callable[_P, str]:
    """``draw`` made twice, wide and narrow, as two ``<svg>`` elements the CSS chooses
    between by the screen's width (classes ``wide`` and ``narrow``)."""

    @functools.wraps(draw)
    def both(*args: _P.args, **kwargs: _P.kwargs) -> str:
        drawings = []
        for variant in ("wide", "narrow"):
            token = _VARIANT.set(variant)
            try:
                svg = draw(*args, **kwargs)
            finally:
                _VARIANT.reset(token)
            drawings.append(svg.replace('class="chart"', f'class="chart {variant}"', 1))
        return "\n".join(drawings)

    return both


class ChartUnavailableError(InvalidInputError):
    """matplotlib is not installed: the report needs the ``report`` extra."""


def _matplotlib() -> Any:
    try:
        import matplotlib
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ChartUnavailableError(
            "the HTML report draws its charts with matplotlib, which is not installed: "
            "pip install 'reident-airflow[report]'"
        ) from exc
    return matplotlib


_RC = {
    "svg.fonttype": "path",
    "font.family": ["DejaVu Sans"],
    "font.size": 10.0,
    "text.parse_math": False,
    "text.color": INK,
    "axes.edgecolor": MUTED,
    "axes.labelcolor": INK,
    "axes.titlesize": 11.0,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "xtick.color": MUTED,
    "ytick.color": MUTED,
    "xtick.labelcolor": INK,
    "ytick.labelcolor": INK,
    "legend.frameon": False,
    "legend.fontsize": 9.0,
    "figure.dpi": 96.0,
    "savefig.transparent": False,
    "savefig.facecolor": "white",
}

_GLYPH_WARNING = r"Glyph \d+ .* missing from font"


@contextmanager
def _figure(name: str, height_in: float) -> Iterator[Figure]:
    mpl = _matplotlib()
    from matplotlib.figure import Figure

    with mpl.rc_context({**_RC, "svg.hashsalt": f"reident-{name}"}):
        width = NARROW_WIDTH_IN if _VARIANT.get() == "narrow" else WIDTH_IN
        fig = Figure(figsize=(width, height_in), layout="constrained")
        yield fig


def _svg(fig: Figure, name: str, title: str) -> str:
    """``fig`` as an inline ``<svg>`` element: no XML prolog, no DOCTYPE, no metadata, no
    comments; ids scoped to ``name``; sized by the page (``viewBox`` kept)."""
    buf = io.StringIO()
    with warnings.catch_warnings():
        # DejaVu Sans lacks some scripts (e.g. CJK column names): those glyphs are drawn as
        # boxes, the HTML tables next to each chart carry the exact names.
        warnings.filterwarnings("ignore", message=_GLYPH_WARNING, category=UserWarning)
        fig.savefig(
            buf,
            format="svg",
            metadata={"Creator": None, "Date": None, "Format": None, "Type": None},
        )
    text = buf.getvalue()
    start = text.index("<svg")
    text = text[start:]
    text = re.sub(r"<!--.*?-->", "", text, flags=re.DOTALL)
    text = re.sub(r"<metadata>.*?</metadata>", "", text, flags=re.DOTALL)
    text = _scope_ids(text, name if _VARIANT.get() == "wide" else f"{name}-narrow")
    # responsive: drop the fixed pt size, keep the viewBox; label it for screen readers
    text = re.sub(
        r'<svg ([^>]*?)width="[^"]*" height="[^"]*"',
        lambda m: f'<svg {m.group(1)}class="chart" role="img" aria-label="{_attr(title)}"',
        text,
        count=1,
    )
    return text.strip()


def _attr(text: str) -> str:
    import html

    return html.escape(text, quote=True)


_ID = re.compile(r'\bid="([^"]+)"')


def _scope_ids(svg: str, prefix: str) -> str:
    ids = set(_ID.findall(svg))
    if not ids:
        return svg

    def fix(match: re.Match[str]) -> str:
        lead, ident, tail = match.group(1), match.group(2), match.group(3)
        return f"{lead}{prefix}-{ident}{tail}" if ident in ids else match.group(0)

    return re.sub(r'(\bid="|href="#|url\(#)([^")]+)([")])', fix, svg)


def _style_axes(ax: Axes, *, grid_axis: str) -> None:
    ax.grid(axis=grid_axis, color=GRID, linewidth=0.8)  # type: ignore[arg-type]
    ax.set_axisbelow(True)
    ax.tick_params(length=0 if grid_axis == "x" else 3.5)


def _fit(text: str) -> str:
    """An axis title as the drawing fits it: on the narrow drawing, wrapped at 40
    characters (it would otherwise run past the figure's edge)."""
    if _VARIANT.get() == "wide":
        return text
    import textwrap

    return "\n".join(textwrap.wrap(text, 40))


def _short(label: str, limit: int | None = None) -> str:
    if limit is None:
        limit = _LABEL_LIMITS[_VARIANT.get()]
    return label if len(label) <= limit else label[: limit - 1] + "…"


def _pct_label(share: float) -> str:
    p = 100.0 * share
    if p == 0:
        return ""
    if p < 0.01:
        return "<0.01 %"
    return f"{p:.3g} %"


# ----------------------------------------------------------------- risk bands (docs/metrics.md §2)
@_responsive
def risk_distribution_chart(
    bands: Sequence[tuple[float, float, float]], record_threshold: float | None
) -> str:
    """Share of records per ARX risk band ``(lower, upper]``, highest risk at the top.

    Bands entirely above ``record_threshold`` (records at risk) are red, a band that straddles
    it amber, the others blue.
    """
    if not bands:
        raise InvalidInputError("no risk bands to draw")
    labels = [f"({_edge(lo)}, {_edge(hi)}]" for lo, hi, _ in bands]
    shares = [100.0 * s for _, _, s in bands]
    colors = []
    for lo, hi, _ in bands:
        if record_threshold is None:
            colors.append(SAFE)
        elif lo >= record_threshold:
            colors.append(RISK)
        elif hi > record_threshold:
            colors.append(PARTLY)
        else:
            colors.append(SAFE)
    height = 1.0 + 0.24 * len(bands)
    with _figure("risk-distribution", height) as fig:
        ax = fig.add_subplot()
        ypos = list(range(len(bands)))
        bars = ax.barh(ypos, shares, color=colors, height=0.72)
        ax.set_yticks(ypos, labels)
        ax.bar_label(bars, labels=[_pct_label(s / 100.0) for s in shares], padding=3, fontsize=8.5)
        top = max(shares) if shares else 0.0
        ax.set_xlim(0, max(top * 1.18, 1.0))
        ax.set_xlabel(_fit("share of records (%)"))
        ax.set_ylabel(_fit("record risk band (prosecutor)"))
        _style_axes(ax, grid_axis="x")
        if record_threshold is not None:
            entries = [
                (SAFE, f"record risk ≤ {record_threshold:g}"),
                (RISK, f"record risk > {record_threshold:g}: records at risk"),
            ]
            if PARTLY in colors:
                entries.append((PARTLY, "band straddles the threshold"))
            _legend(fig, entries)
            safe = [i for i, col in enumerate(colors) if col == SAFE]
            if safe and len(safe) < len(colors):
                y = max(safe) + 0.5
                ax.axhline(y, color=INK, linestyle="--", linewidth=1.0)
                label = f"record-risk threshold {record_threshold:g}"
                if PARTLY not in colors and _VARIANT.get() == "wide":
                    above = sum(sh for sh, col in zip(shares, colors, strict=True) if col == RISK)
                    label += f": {above:.3g} % of the records above"
                _label_line(ax, label, y=y, offset=(-2, 3), color=RISK)
        return _svg(fig, "risk-distribution", "Share of records per risk band")


def _label_line(
    ax: Axes,
    text: str,
    *,
    x: float | None = None,
    y: float | None = None,
    offset: tuple[float, float] = (0, 3),
    color: str | None = None,
) -> None:
    """Label a threshold line: the vertical line at data ``x`` at its top, or the horizontal
    line at data ``y`` at its right end; ``text`` is right-aligned just above that point,
    shifted by ``offset`` points."""
    if x is not None:
        xy, coords = (x, 1.0), ("data", "axes fraction")
    elif y is not None:
        xy, coords = (1.0, y), ("axes fraction", "data")
    else:
        raise ValueError("_label_line needs x or y")
    ax.annotate(
        text,
        xy=xy,
        xycoords=coords,
        xytext=offset,
        textcoords="offset points",
        ha="right",
        va="bottom",
        fontsize=8.5,
        color=color,
    )


def _edge(x: float) -> str:
    if x == 0:
        return "0"
    return f"{x:g}"


def _legend(fig: Figure, entries: Sequence[tuple[str, str]]) -> None:
    """A legend above the axes (outside them: it never hides a bar or a label)."""
    if not entries:
        return
    from matplotlib.patches import Patch

    handles = [Patch(facecolor=c, edgecolor="none", label=text) for c, text in entries]
    ncols = min(len(handles), 3) if _VARIANT.get() == "wide" else 1
    fig.legend(handles=handles, loc="outside upper center", ncols=ncols)


# ------------------------------------------------------------ class sizes (docs/metrics.md §1, §2)
CLASS_SIZE_BUCKETS: tuple[tuple[int, int | None], ...] = (
    (1, 1),
    (2, 2),
    (3, 3),
    (4, 4),
    (5, 5),
    (6, 10),
    (11, 20),
    (21, 50),
    (51, 100),
    (101, 1000),
    (1001, 10_000),
    (10_001, 100_000),
    (100_001, None),
)


def bucket_label(lo: int, hi: int | None) -> str:
    if hi is None:
        return f"> {lo - 1:,}"
    return f"{lo:,}" if lo == hi else f"{lo:,}–{hi:,}"


def class_size_buckets(
    histogram: Sequence[tuple[int, int]],
) -> list[tuple[int, int | None, int, int]]:
    """``(lo, hi, classes, records)`` per bucket of :data:`CLASS_SIZE_BUCKETS`, up to the
    largest class (empty buckets in between are kept, so the axis is regular)."""
    largest = max((s for s, _ in histogram), default=0)
    out: list[tuple[int, int | None, int, int]] = []
    for lo, hi in CLASS_SIZE_BUCKETS:
        if lo > largest:
            break
        classes = sum(c for s, c in histogram if s >= lo and (hi is None or s <= hi))
        records = sum(s * c for s, c in histogram if s >= lo and (hi is None or s <= hi))
        out.append((lo, hi, classes, records))
    return out


def _bucket_color(lo: int, hi: int | None, risky_below: int | None) -> str:
    if risky_below is None or lo >= risky_below:
        return SAFE
    if hi is not None and hi < risky_below:
        return RISK
    return PARTLY


@_responsive
def class_size_chart(
    histogram: Sequence[tuple[int, int]], risky_below: int | None, risky_label: str = ""
) -> str:
    """Number of equivalence classes per class size (bucketed); classes smaller than
    ``risky_below`` are red (``risky_label`` says why)."""
    buckets = class_size_buckets(histogram)
    if not buckets:
        raise InvalidInputError("no classes to draw")
    labels = [bucket_label(lo, hi) for lo, hi, _, _ in buckets]
    classes = [c for _, _, c, _ in buckets]
    total_records = sum(r for *_, r in buckets) or 1
    colors = [_bucket_color(lo, hi, risky_below) for lo, hi, _, _ in buckets]
    with _figure("class-sizes", 3.4) as fig:
        ax = fig.add_subplot()
        xpos = list(range(len(buckets)))
        bars = ax.bar(xpos, classes, color=colors, width=0.7)
        narrow = _VARIANT.get() == "narrow"
        crowded = len(labels) > (4 if narrow else 8)
        ax.set_xticks(xpos, labels, rotation=(45 if narrow else 30) if crowded else 0, ha="center")
        ax.bar_label(
            bars,
            labels=[  # the narrow drawing: the count only (the shares are in the table below)
                (f"{c:,}" if narrow else f"{c:,}\n{_pct_label(r / total_records)}") if c else ""
                for _, _, c, r in buckets
            ],
            padding=2,
            fontsize=8,
            color=INK,
        )
        ax.set_ylim(0, max(classes) * 1.3 if max(classes) else 1)
        ax.set_xlabel(_fit("class size (records sharing the same quasi-identifier values)"))
        ax.set_ylabel(_fit("number of classes"))
        _style_axes(ax, grid_axis="y")
        if risky_below is not None:
            why = f" ({risky_label})" if risky_label else ""
            entries = [(RISK, f"classes smaller than {risky_below:,}{why}"), (SAFE, "the others")]
            if any(col == PARTLY and c for col, c in zip(colors, classes, strict=True)):
                entries.insert(1, (PARTLY, "bucket straddles the limit"))
            _legend(fig, entries)
        return _svg(fig, "class-sizes", "Number of classes per class size")


# ---------------------------------------------------------- quasi-identifiers (docs/metrics.md §5)
@_responsive
def attribute_chart(items: Sequence[tuple[str, float | None, float | None]]) -> str:
    """Distinction and separation of the top column sets, most re-identifying at the top."""
    if not items:
        raise InvalidInputError("no column sets to draw")
    labels = [_short(label) for label, _, _ in items]
    dist = [0.0 if d is None else 100.0 * d for _, d, _ in items]
    sep = [0.0 if s is None else 100.0 * s for _, _, s in items]
    n = len(items)
    height = 1.1 + 0.42 * n
    with _figure("attributes", height) as fig:
        ax = fig.add_subplot()
        ypos = [n - 1 - i for i in range(n)]
        h = 0.38
        b1 = ax.barh([y + h / 2 for y in ypos], dist, height=h, color=RISK)
        b2 = ax.barh([y - h / 2 for y in ypos], sep, height=h, color=SECOND)
        ax.set_yticks(ypos, labels)
        for bars, values in ((b1, dist), (b2, sep)):
            ax.bar_label(
                bars, labels=[f"{v:.3g} %" for v in values], padding=3, fontsize=8, color=INK
            )
        ax.set_xlim(0, 112)
        ax.set_xlabel(
            _fit("% (distinction: classes / records; separation: record pairs told apart)")
        )
        _style_axes(ax, grid_axis="x")
        _legend(fig, [(RISK, "distinction"), (SECOND, "separation")])
        return _svg(fig, "attributes", "Distinction and separation per column set")


# --------------------------------------------------------------- direct match (docs/metrics.md §8)
@_responsive
def direct_match_chart(columns: Sequence[tuple[str, float]], target: float | None) -> str:
    """Protection ``P_c`` (0-100) per column, least protected at the top; red below target."""
    if not columns:
        raise InvalidInputError("no columns to draw")
    n = len(columns)
    labels = [_short(name) for name, _ in columns]
    values = [p for _, p in columns]
    colors = [RISK if target is not None and p < target else SAFE for p in values]
    with _figure("direct-match", 1.1 + 0.32 * n) as fig:
        ax = fig.add_subplot()
        ypos = [n - 1 - i for i in range(n)]
        bars = ax.barh(ypos, values, color=colors, height=0.7)
        ax.set_yticks(ypos, labels)
        ax.bar_label(bars, labels=[f"{v:.4g}" for v in values], padding=3, fontsize=8)
        low = min(values + ([target] if target is not None else []))
        ax.set_xlim(min(0.0, math.floor(low)), 108)
        if target is not None:
            ax.axvline(target, color=INK, linestyle="--", linewidth=1.2)
            _label_line(ax, f"target {target:g}", x=target, offset=(-4, 2))
        ax.set_xlabel(_fit("column direct match protection (0 = every value kept, 100 = none)"))
        _style_axes(ax, grid_axis="x")
        if target is not None:
            _legend(fig, [(RISK, "below the target"), (SAFE, "at or above it")])
        return _svg(fig, "direct-match", "Direct match protection per column")


# -------------------------------------------------------------------- Datafly (docs/metrics.md §9)
@_responsive
def datafly_steps_chart(
    steps: Sequence[tuple[str, int]], suppression_limit: int | None, k: int | None
) -> str:
    """Records in classes smaller than k after each generalization step, with the suppression
    limit: Datafly stops at the first step at or under it."""
    if not steps:
        raise InvalidInputError("no steps to draw")
    labels = [label for label, _ in steps]
    below = [b for _, b in steps]
    colors = [
        SAFE if suppression_limit is not None and b <= suppression_limit else RISK for b in below
    ]
    n = len(steps)
    with _figure("datafly-steps", 3.2 + (0.6 if n > 6 else 0.0)) as fig:
        ax = fig.add_subplot()
        xpos = list(range(1, n + 1))
        bars = ax.bar(xpos, below, color=colors, width=0.7)
        ax.bar_label(bars, labels=[f"{b:,}" for b in below], padding=2, fontsize=8)
        ax.set_xticks(xpos, [_short(t, 22) for t in labels], rotation=30 if n > 5 else 0)
        top = max([*below, suppression_limit or 0])
        ax.set_ylim(0, top * 1.2 if top else 1)
        if suppression_limit is not None:
            ax.axhline(suppression_limit, color=INK, linestyle="--", linewidth=1.2)
            _label_line(ax, f"suppression limit {suppression_limit:,}", y=suppression_limit)
        below_k = f"< {k:,}" if k is not None else "< k"
        ax.set_ylabel(_fit(f"records in classes {below_k}"))
        ax.set_xlabel(_fit("generalization step (column → level)"))
        _style_axes(ax, grid_axis="y")
        if suppression_limit is not None:
            _legend(
                fig,
                [
                    (RISK, "more than the suppression limit: generalize further"),
                    (SAFE, "within it: these records are suppressed"),
                ],
            )
        return _svg(fig, "datafly-steps", "Records below k after each Datafly step")
