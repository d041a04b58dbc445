"""The offline HTML report: leaderboard, learning curves, paired gains, per-profile breakdown.

:func:`build_report` writes ``DIR/report.html`` (one self-contained file: inline CSS and SVG)
and every figure as PNG and SVG under ``DIR/figures/``. Needs matplotlib
(``pip install "persona-bench[report]"``), imported only when a report is built.
"""

from persona_bench.report.build import REPORT_NAME, ReportResult, build_report
from persona_bench.report.data import ReportWarning, load_input
from persona_bench.report.figures import MissingDependencyError

__all__ = [
    "REPORT_NAME",
    "MissingDependencyError",
    "ReportResult",
    "ReportWarning",
    "build_report",
    "load_input",
]
