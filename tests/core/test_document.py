"""The one document model: every writer keeps the numbers, escapes what it must, and the HTML
page is self-contained."""

from __future__ import annotations

import json

import pytest

from prefduel.core.document import (
    NO_VALUE,
    Cell,
    Document,
    Figure,
    Items,
    Paragraph,
    Raw,
    Section,
    Settings,
    Table,
    number,
)
from prefduel.core.document_html import stylesheet, to_html
from prefduel.core.document_text import (
    markdown_escape,
    table_csv,
    table_markdown,
    table_text,
    to_json,
    to_markdown,
    to_text,
)


def _board() -> Table:
    return Table(
        ["policy", "seeds", "score"],
        [
            [Cell("coduel", color="#123456"), 32, Cell("45.12", se="1.20")],
            ["ref:oracle", 32, Cell("183.00", se="10.50", tone="good")],
        ],
        row_tones=["", "ref"],
        key="board",
        note="32 seeds per row",
    )


def _document() -> Document:
    return Document(
        "Report <x>",
        [
            Section(
                "Leaderboard",
                [Paragraph("Intro <script>alert(1)</script>", "lead"), _board()],
                subsections=[Section("Settings", [Settings([("seed", "0")])])],
            ),
            Section("Figures", [Figure("curve", "<svg id='s'></svg>", "figures/curve.svg")]),
        ],
        warnings=["mixed versions"],
    )


def test_number_formats_missing_values_as_a_dash():
    assert number(1.234, 2) == "1.23"
    assert number(1.0, 1, sign=True, suffix="%") == "+1.0%"
    assert number(None, 2) == NO_VALUE
    assert number(float("nan"), 2) == NO_VALUE


def test_number_can_switch_to_scientific_notation_for_tiny_and_huge_values():
    assert number(1.234e-5, 4, scientific=True) == "1.23e-05"
    assert number(1.234e-5, 4) == "0.0000"  # off by default
    assert number(-250000.0, 1, scientific=True) == "-2.50e+05"
    assert number(0.5, 3, sign=True, suffix="%", scientific=True) == "+0.500%"
    assert number(0.0, 3, scientific=True) == "0.000"  # zero is never scientific
    assert number(None, 3, scientific=True) == NO_VALUE


def test_a_row_of_the_wrong_length_is_refused_with_the_table_named():
    with pytest.raises(ValueError, match="table 'board': row 0 has 2 cells for 3 columns"):
        Table(["a", "b", "c"], [[1, 2]], key="board")


def test_text_aligns_numbers_right_and_plus_minus_signs_in_one_column():
    lines = table_text(_board()).splitlines()
    assert lines[0].split() == ["policy", "seeds", "score"]
    assert lines[1].index("±") == lines[2].index("±")
    assert lines[1].endswith(" 1.20") and lines[2].endswith("10.50")
    assert lines[-1] == "32 seeds per row"


def test_html_escapes_text_but_keeps_figures_and_raw_fragments():
    page = to_html(_document())
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;" in page and "Report &lt;x&gt;" in page
    assert "<svg id='s'></svg>" in page
    assert stylesheet() in page and "<script" not in page.replace("&lt;script", "")
    assert 'class="ref"' in page and 'style="background:#123456"' in page
    assert to_html(Document("t", [Section("s", [Raw("<b id=w>x</b>", "x")])])).count("<b id=w>")


def test_markdown_links_figures_and_escapes_pipes():
    blocks = [Figure("c", "<svg/>", "figures/c.svg"), Table(["a|b"], [["x|y"]])]
    doc = Document("t", [Section("s", blocks)])
    text = to_markdown(doc)
    assert "![c](figures/c.svg)" in text and "<svg" not in text
    assert "| a\\|b |" in text and "| x\\|y |" in text


def test_csv_splits_standard_errors_into_their_own_column_and_neutralises_formulas():
    table = Table(["name", "score"], [["=HYPERLINK(1)", Cell("1.5", se="0.2")], ["-2", "3"]])
    assert table_csv(table).splitlines() == [
        "name,score,score se",
        "'=HYPERLINK(1),1.5,0.2",
        "-2,3,",
    ]


def test_json_holds_every_table_cell_and_figure_paths_not_svg():
    data = json.loads(to_json(_document()))
    board = data["sections"][0]["blocks"][1]
    assert board["key"] == "board" and board["rows"][0] == ["coduel", "32", "45.12 ± 1.20"]
    assert data["sections"][1]["blocks"][0] == {"type": "figure", "caption": "curve",
                                                "path": "figures/curve.svg"}


def test_text_writer_lists_sections_warnings_and_items():
    doc = _document()
    doc.sections.append(Section("More", [Items(["one", "two"])]))
    text = to_text(doc)
    assert "warning: mixed versions" in text
    assert "Leaderboard\n===========" in text and "Settings\n--------" in text
    assert "- one\n- two" in text
    assert [t.key for t in doc.tables()] == ["board"]


def _ranked() -> Table:
    return Table(
        ["policy", "interval"],
        [["ref:oracle_user", "[0.1, 0.3]"], ["my_pol.py:A*", "[-0.2, 10.5]"]],
        row_tones=["ref", ""],
        align=("left", "right"),
        header_rule=True,
        ref_marker="[ref]",
        escape_emphasis=True,
    )


def test_explicit_alignment_overrides_number_detection_and_is_checked():
    table = _ranked()
    assert table.numeric_columns() == [False, True]
    assert table_markdown(table).splitlines()[1] == "|---|---:|"
    assert Table(["a"], [["[1, 2]"]]).numeric_columns() == [False]  # detected by default
    with pytest.raises(ValueError, match="table 't': 1 alignments for 2 columns"):
        Table(["a", "b"], [], key="t", align=("left",))


def test_text_can_underline_the_header_and_mark_reference_rows():
    lines = table_text(_ranked()).splitlines()
    assert lines[0].split() == ["policy", "interval"]
    assert lines[1] == "-" * len("ref:oracle_user [ref]") + "  " + "-" * len("[-0.2, 10.5]")
    assert lines[2].startswith("ref:oracle_user [ref]  ") and lines[2].endswith(" [0.1, 0.3]")
    assert lines[3].startswith("my_pol.py:A* ") and "[ref]" not in lines[3]
    plain = table_text(Table(["a"], [["x"]], row_tones=["ref"]))
    assert plain == "a\nx"  # no rule, no marker unless asked


def test_markdown_can_italicise_reference_rows_and_escape_emphasis():
    lines = table_markdown(_ranked()).splitlines()
    assert lines[2] == "| *ref:oracle\\_user* | [0.1, 0.3] |"
    assert lines[3] == "| my\\_pol.py:A\\* | [-0.2, 10.5] |"
    assert markdown_escape("a_b*c`d|e") == "a_b*c`d\\|e"
    assert markdown_escape("a_b*c`d|e", emphasis=True) == "a\\_b\\*c\\`d\\|e"
    default = table_markdown(Table(["p"], [["ref:a_b"]], row_tones=["ref"]))
    assert default.splitlines()[2] == "| ref:a_b |"


def test_total_rows_are_marked_in_html_and_styled_by_the_stylesheet():
    table = Table(["task", "n"], [["a", 1], ["all", 2]], row_tones=["", "total"])
    page = to_html(Document("t", [Section("s", [table])]))
    assert '<tr class="total"><td>all</td>' in page
    assert "tr.total td {" in stylesheet()


def test_html_escapes_text_as_the_standard_library_does():
    from html import escape

    note = "2 for 'random' & \"q\" <b>"
    doc = Document("t", [Section("s", [Paragraph(note), Raw("<i id='r'>x</i>", "x")])])
    stdlib = to_html(doc)
    assert escape(note) in stdlib
    assert "<b>" not in stdlib and "<i id='r'>x</i>" in stdlib  # Raw stays markup
    assert stylesheet() in stdlib


def test_markdown_never_carries_raw_html_or_links_from_names():
    """Names come from users' files: rendered as MkDocs does, none may become a tag or a link."""
    import markdown

    evil = "<script>alert(1)</script>"
    link = "[x](javascript:alert(1))"
    doc = Document(
        title=f"report {evil}",
        subtitle=f"for {evil}",
        warnings=[f"model {evil} skipped"],
        intro=[Paragraph(f"best model: {evil}, then `{evil}`, and a < b")],
        sections=[
            Section(
                title=f"users {evil}",
                blocks=[
                    Table(["model", "votes"], [[evil, 3], [link, 4]], title=evil),
                    Items([f"user {evil}"]),
                    Figure(caption=f"scores of {evil}", path="figures/a.svg"),
                ],
            )
        ],
    )
    html = markdown.markdown(to_markdown(doc), extensions=["tables"])
    assert "<script" not in html
    assert 'href="javascript' not in html
    assert "&lt;script&gt;" in html  # shown as text
    assert "a &lt; b" in html  # a plain less-than still reads as one
