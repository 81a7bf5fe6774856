"""What `ragpulse score` prints at the end: the summary table, the baseline comparison and the
`--fail-under` gate."""

from __future__ import annotations

from ragpulse.scorer.batch.run import BatchReport
from ragpulse.scorer.batch.stats import MeanCI, mean_ci, paired


def parse_gates(specs: list[str], metrics: list[str]) -> dict[str, float]:
    """`faithfulness=0.8` ... -> {metric: minimum mean}; raises ValueError naming the bad one."""
    gates: dict[str, float] = {}
    for spec in specs:
        name, sep, text = spec.partition("=")
        if not sep:
            raise ValueError(f"{spec!r}: expected METRIC=MINIMUM, e.g. faithfulness=0.8")
        if name not in metrics:
            raise ValueError(f"{spec!r}: {name!r} is not among the metrics computed ({', '.join(metrics)})")
        try:
            minimum = float(text)
        except ValueError:
            raise ValueError(f"{spec!r}: {text!r} is not a number") from None
        if not 0.0 <= minimum <= 1.0:
            raise ValueError(f"{spec!r}: the minimum must be in [0, 1]")
        gates[name] = minimum
    return gates


def gate_failures(report: BatchReport, gates: dict[str, float]) -> list[str]:
    """One line per gate not met; a metric with no score at all fails its gate."""
    failed = []
    for name, minimum in gates.items():
        values = report.values.get(name, [])
        if not values:
            failed.append(f"{name}: no row was scored (gate {minimum:g})")
            continue
        mean = sum(values) / len(values)
        if mean < minimum:
            failed.append(f"{name}: mean {mean:.3f} is {minimum - mean:.3f} below the gate {minimum:g}")
    return failed


def _ci(ci: MeanCI) -> str:
    return "-" if ci.low is None or ci.high is None else f"[{ci.low:.3f}, {ci.high:.3f}]"


def _table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in [header, *rows]]
    return "\n".join([lines[0], "  ".join("-" * w for w in widths), *lines[1:]])


def summary(report: BatchReport, metrics: list[str]) -> str:
    rows = []
    for name in metrics:
        ci = mean_ci(report.values.get(name, []))
        failures = sorted((reason, n) for (m, reason), n in report.failures.items() if m == name)
        rows.append([name, str(ci.n), "-" if ci.n == 0 else f"{ci.mean:.3f}", _ci(ci),
                     str(sum(n for _, n in failures)), ", ".join(f"{r} x{n}" for r, n in failures)])
    return _table(["metric", "scored", "mean", "95% CI (t)", "failed", "reasons"], rows)


def comparison(report: BatchReport, metrics: list[str]) -> str:
    rows = []
    for name in metrics:
        current, previous = report.pairs.get(name, ([], []))
        if not current:
            rows.append([name, "0", "-", "-", "-", "-", "-"])
            continue
        result = paired(current, previous)
        p = "-" if result.p_wilcoxon is None else f"{result.p_wilcoxon:.3g}"
        rows.append([name, str(result.n), f"{sum(previous) / len(previous):.3f}", f"{sum(current) / len(current):.3f}",
                     f"{result.diff.mean:+.3f}", _ci(result.diff), p])
    table = _table(["metric", "paired", "baseline", "now", "difference", "95% CI (paired t)", "p (Wilcoxon)"], rows)
    return table + (f"\n{report.unmatched} scored rows had no match in the baseline" if report.unmatched else "")
