"""The report on a breach of ``min_k``: the "What to do" block (classes and records below k,
the driving QI, Datafly's outlook), the preset's release context and source, and documents
that predate those keys. The documents are hand-made (``tests/report/documents.py`` shows
every number's computation)."""

from __future__ import annotations

from typing import Any

import pytest

from reident_airflow.engine.presets import PRESETS
from reident_airflow.report import render_report
from reident_airflow.report.view import AdviceView, AssessmentView
from tests.report.documents import INFEASIBLE_DATAFLY, SMALL_BREACH, small_breach, without
from tests.report.test_report import check_page


def _section(html: str, anchor: str) -> str:
    start = html.index(f'id="{anchor}"')
    return html[start : html.index("</section>", start)]


def _advice(**changes: Any) -> dict[str, Any]:
    return small_breach(advice={**SMALL_BREACH["advice"], **changes})


# ------------------------------------------------------------------------------- the view
def test_the_view_reads_the_advice() -> None:
    view = AssessmentView.from_dict(SMALL_BREACH)
    advice = view.advice
    assert advice is not None
    assert (advice.k, advice.classes_below_k, advice.records_below_k) == (3, 3, 4)
    assert advice.share_below_k == pytest.approx(4 / 9)
    assert advice.driver is not None and advice.driver.column == "a"
    assert advice.datafly is not None and advice.datafly.feasible is True
    assert advice.datafly.levels == (("a", 1), ("b", 0))


def test_the_view_tolerates_a_partial_advice() -> None:
    advice = AdviceView.from_dict({"k": "3", "driver": [1], "datafly": {"levels": {"a": "x"}}})
    assert advice.k is None and advice.driver is None and advice.share_below_k is None
    assert advice.datafly is not None and advice.datafly.levels == (("a", None),)
    assert advice.describe() == (
        "n/a of n/a classes, holding n/a of n/a records, are smaller than k=n/a; the result "
        "does not say whether Datafly can reach k=n/a."
    )


def test_the_view_words_the_engine_s_facts() -> None:
    # the engine's BreachAdvice.describe() on the same facts says (tests/engine/test_advice.py):
    # "3 of 4 classes, holding 4 of 9 records, are smaller than k=3"
    text = AssessmentView.from_dict(SMALL_BREACH).advice.describe()  # type: ignore[union-attr]
    assert text == (
        "3 of 4 classes, holding 4 of 9 records (44.4 %), are smaller than k=3; 'a' drives "
        "the risk: without it the distinction falls from 0.4444 to 0.2222; Datafly at k=3 "
        "would generalize a→1, b→0 and suppress 2 record(s)."
    )


# ------------------------------------------------------------------------------ the block
def test_what_to_do_block() -> None:
    html = render_report(SMALL_BREACH)
    check_page(html)
    block = _section(html, "assessment-advice")
    assert "<h2>What to do</h2>" in block
    assert '<div class="v">3 of 4</div><div class="k">classes smaller than k = 3</div>' in block
    assert '<div class="v">4 of 9</div><div class="k">records in them</div>' in block
    assert '<div class="v">44.4 %</div><div class="k">share of the records</div>' in block
    # distinction 4/9 = 44.4 %, without a 2/9 = 22.2 %
    assert "Without <code>a</code> the distinction" in block
    assert "from 44.4 % (0.4444) to 22.2 % (0.2222)" in block
    assert "suppresses <strong>2</strong> record(s) (its limit: 3)" in block
    assert '<td data-label="quasi-identifier">a</td><td class="num" ' in block
    assert 'data-label="hierarchy level">1</td>' in block
    # the block comes first in the assessment and the navigation links to it
    assert html.index('id="assessment-advice"') < html.index('id="assessment-glance"')
    assert '<a href="#assessment-advice">What to do</a>' in html


def test_an_infeasible_outlook() -> None:
    html = render_report(_advice(datafly=INFEASIBLE_DATAFLY))
    block = _section(html, "assessment-advice")
    assert '<p class="na">Datafly cannot reach k = 3 within its suppression limit of 0 ' in block
    assert "at its most generalized attempt, 2 record(s) are still below k." in block
    assert "suppresses" not in block


def test_without_driver_or_datafly_the_block_says_why() -> None:
    block = _section(render_report(_advice(driver=None, datafly=None)), "assessment-advice")
    assert "No column is named as the driver" in block
    assert "No Datafly outlook: it needs a generalization hierarchy for every" in block
    assert "<table>" not in block


def test_the_advice_holds_no_record_value() -> None:
    # hand-made: the table's values x, y, z, w never reach the document, nor the block
    block = _section(render_report(SMALL_BREACH), "assessment-advice")
    for value in (">x<", ">y<", ">z<", ">w<", "(x", "(w"):
        assert value not in block


def test_a_column_name_in_the_advice_is_escaped() -> None:
    hostile = "<b>a</b>"
    doc = _advice(
        driver={"column": hostile, "distinction": 0.5, "distinction_without": 0.25},
        datafly={**SMALL_BREACH["advice"]["datafly"], "levels": {hostile: 1}},
    )
    html = render_report(doc)
    check_page(html)
    assert hostile not in html and "&lt;b&gt;a&lt;/b&gt;" in html


# ------------------------------------------------------------ level labels and trade-off
#: SMALL_BREACH's outlook as this version writes it (tests/report/documents.py): a's
#: hierarchy value -> * has one label at level 1, b stays at level 0; before any step the
#: classes of 1, 1 and 2 hold 4 records below k = 3, after a -> 1 the class (*, 1) of 2
#: records: 2 below, within the limit of 3, where Datafly stops.
LABELLED = {
    **SMALL_BREACH["advice"]["datafly"],
    "level_labels": {"a": "all in one group", "b": "as is"},
    "tradeoff": [
        {"levels": {"a": 0, "b": 0}, "suppressed": 4},
        {"levels": {"a": 1, "b": 0}, "suppressed": 2},
    ],
}


def test_the_view_reads_labels_and_trade_off() -> None:
    view = AssessmentView.from_dict(_advice(datafly=LABELLED)).advice
    assert view is not None and view.datafly is not None
    outlook = view.datafly
    assert outlook.labels == (("a", "all in one group"), ("b", "as is"))
    assert [(r.levels, r.suppressed) for r in outlook.tradeoff] == [
        ((("a", 0), ("b", 0)), 4),
        ((("a", 1), ("b", 0)), 2),
    ]
    assert view.describe().endswith(
        "Datafly at k=3 would generalize a → all in one group (level 1), b → as is (level 0) "
        "and suppress 2 record(s)."
    )


def test_the_block_shows_labels_and_the_trade_off() -> None:
    html = render_report(_advice(datafly=LABELLED))
    check_page(html)
    block = _section(html, "assessment-advice")
    assert '<td data-label="meaning">all in one group</td>' in block
    assert "<h3>Trade-off: coarser levels against suppressed records</h3>" in block
    # two rows: levels (0, 0) with 4 below k, then (1, 0) with 2, where Datafly stops
    assert (
        '<td class="num" data-label="a">0</td><td class="num" data-label="b">0</td>'
        '<td class="num" data-label="records below k">4</td><td data-label="Datafly"></td>'
    ) in block
    assert (
        '<td class="num" data-label="a">1</td><td class="num" data-label="b">0</td>'
        '<td class="num" data-label="records below k">2</td>'
        '<td data-label="Datafly">Datafly stops here</td>'
    ) in block
    # a document without them has neither (SMALL_BREACH predates both keys)
    old = _section(render_report(SMALL_BREACH), "assessment-advice")
    assert "meaning" not in old and "Trade-off" not in old


def test_mistyped_labels_and_trade_off_are_left_out() -> None:
    junk = {**LABELLED, "level_labels": ["a"], "tradeoff": [3, "x", {"levels": 1}]}
    view = AdviceView.from_dict({**SMALL_BREACH["advice"], "datafly": junk})
    assert view.datafly is not None and view.datafly.labels == ()
    assert [(r.levels, r.suppressed) for r in view.datafly.tradeoff] == [((), None)]
    check_page(render_report(_advice(datafly=junk)))
    hostile = {**LABELLED, "level_labels": {"a": "<i>x</i>"}}
    hostile["tradeoff"] = [
        {"levels": {"a": 1, "b": 0}, "suppressed": 2, "labels": {"a": "<i>x</i>"}}
    ]
    html = render_report(_advice(datafly=hostile))
    assert "<i>x</i>" not in html and "&lt;i&gt;x&lt;/i&gt;" in html


# ----------------------------------------------------------------------------- the preset
def test_the_preset_s_context_and_source() -> None:
    html = render_report(SMALL_BREACH)
    text = check_page(html)
    k5 = PRESETS["k5"]
    # the document gives min_k = 3 beside the preset, whose min_k is 5: the 3 wins
    assert (
        f"The thresholds are those of the preset 'k5' ({k5.context}), but for min_k = 3 "
        "(the preset's 5)." in text
    )
    inputs = _section(html, "assessment-inputs")
    assert "<dt>preset</dt><dd>k5</dd>" in inputs
    assert "<dt>preset limits</dt><dd>min_k = 5</dd>" in inputs
    assert f"<dt>release context</dt><dd>{k5.context}</dd>" in inputs
    assert "<dt>preset source</dt><dd>the minimum class size of 5 used by many" in inputs


def test_the_ema_preset_cites_its_guidance() -> None:
    doc = small_breach(preset="ema-0070", thresholds={"min_k": 3, "max_average_risk": 0.09})
    html = render_report(doc)
    inputs = _section(html, "assessment-inputs")
    assert "<dd>max_average_risk = 0.09</dd>" in inputs
    assert "(EMA/90915/2016)" in inputs
    # its one limit, 0.09, is the one applied: nothing overridden
    context = PRESETS["ema-0070"].context
    assert f"The thresholds are those of the preset 'ema-0070' ({context})." in check_page(html)


def test_an_unknown_preset_is_shown_as_given() -> None:
    html = render_report(small_breach(preset="house-rule-7"))
    text = check_page(html)
    assert "The thresholds are those of the preset 'house-rule-7'." in text
    inputs = _section(html, "assessment-inputs")
    assert "<dd>house-rule-7 (not a preset this version knows)</dd>" in inputs
    assert "preset source" not in inputs


# ------------------------------------------------------------------------- older documents
@pytest.mark.parametrize(
    "keys",
    [("advice",), ("preset",), ("advice", "preset", "warn_thresholds", "warnings")],
    ids=["no-advice", "no-preset", "none-of-the-new-keys"],
)
def test_documents_without_the_new_keys_still_render(keys: tuple[str, ...]) -> None:
    html = render_report(without(*keys))
    text = check_page(html)
    assert '<div class="word">BREACHED</div>' in html
    assert ('id="assessment-advice"' in html) is ("advice" not in keys)
    assert ("preset" in text) is ("preset" not in keys)
    if "warnings" in keys:  # nothing but the breach: no warning row, no warning level
        assert "warning" not in text.lower()


def test_a_mistyped_advice_is_left_out() -> None:
    for junk in ("advice", 3, ["k", 3], None):
        html = render_report(small_breach(advice=junk))
        check_page(html)
        assert 'id="assessment-advice"' not in html


def test_trade_off_rows_show_their_labels() -> None:
    # the rows of LABELLED with the labels this version writes: a level above 0 shows its
    # label beside its number; level 0 ("as is") shows the number alone
    rows = [
        {**r, "labels": {"a": "all in one group" if r["levels"]["a"] else "as is", "b": "as is"}}
        for r in LABELLED["tradeoff"]
    ]
    html = render_report(_advice(datafly={**LABELLED, "tradeoff": rows}))
    check_page(html)
    block = _section(html, "assessment-advice")
    assert (
        '<td data-label="a">1: all in one group</td><td data-label="b">0</td>'
        '<td class="num" data-label="records below k">2</td>'
    ) in block
    assert '<td data-label="a">0</td><td data-label="b">0</td>' in block
    view = AdviceView.from_dict(
        {**SMALL_BREACH["advice"], "datafly": {**LABELLED, "tradeoff": rows}}
    )
    assert view.datafly is not None
    assert view.datafly.tradeoff[1].labels == (("a", "all in one group"), ("b", "as is"))
