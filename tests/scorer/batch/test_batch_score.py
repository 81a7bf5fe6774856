"""`ragpulse score` through the real CLI: JSONL and CSV, Ragas's column names, the summary,
the --fail-under gate's exit codes, and a paired comparison with a baseline run."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ragpulse.scorer.batch.stats import mean_ci, paired, t_quantile, wilcoxon_p

# (question, context, faithful answer, made-up answer): the made-up one contradicts the context.
FACTS = [
    ("When was the Eiffel Tower completed?",
     "The Eiffel Tower in Paris was completed in 1889 for the World's Fair. It was designed by the engineering "
     "company of Gustave Eiffel.",
     "The Eiffel Tower was completed in 1889 for the World's Fair.",
     "The Eiffel Tower was completed in 1925 by the Italian architect Marco Rossi."),
    ("What is the boiling point of water at sea level?",
     "At sea level, water boils at 100 degrees Celsius. At higher altitudes the boiling point is lower.",
     "Water boils at 100 degrees Celsius at sea level.",
     "Water boils at 72 degrees Celsius at sea level because of magnetic fields."),
    ("Who wrote Pride and Prejudice?",
     "Pride and Prejudice is an 1813 novel by Jane Austen. It follows Elizabeth Bennet.",
     "Pride and Prejudice was written by Jane Austen and published in 1813.",
     "Pride and Prejudice was written by Charles Dickens in 1901."),
    ("How many moons does Mars have?",
     "Mars has two small moons, Phobos and Deimos. Both were discovered by Asaph Hall in 1877.",
     "Mars has two moons, Phobos and Deimos, discovered in 1877.",
     "Mars has fourteen moons, the largest being Titanus, found in 1990."),
    ("What is the capital of Australia?",
     "Canberra is the capital city of Australia. It was selected as the capital in 1908.",
     "The capital of Australia is Canberra, selected in 1908.",
     "The capital of Australia is Sydney, chosen in 1950 by Queen Victoria."),
    ("日本の首都はどこですか？",
     "日本の首都は東京です。東京には約1400万人が住んでいます。",
     "日本の首都は東京で、約1400万人が住んでいます。",
     "日本の首都は大阪で、約300万人が住んでいます。"),
]


def write_jsonl(path: Path, rows: list[dict | str]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n" for r in rows),
                    encoding="utf-8")
    return path


def dataset(path: Path, made_up: bool) -> Path:
    return write_jsonl(path, [{"id": i, "question": q, "contexts": [c], "answer": bad if made_up else good}
                              for i, (q, c, good, bad) in enumerate(FACTS)])


def score(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ragpulse.cli", "score", *map(str, args)],
                          capture_output=True, text=True, timeout=300)


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_score_file_keeps_keys_reports_bad_rows(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [
        {"id": 1, "question": "What is the capital of Japan?", "contexts": ["Tokyo is the capital of Japan."],
         "answer": "The capital of Japan is Tokyo."},
        "this line is not json",
        {"id": 3, "question": "Q?", "contexts": "not a list", "answer": "A."},
        {"id": 4, "question": "日本の首都はどこですか？", "contexts": ["日本の首都は東京です。"],
         "answer": "東京です。"},
        {"id": 5, "question": "What is it?", "contexts": [], "answer": "It is a thing."},
    ])
    out = tmp_path / "out.jsonl"
    result = score("--input", source, "--output", out)
    assert result.returncode == 0, result.stderr
    assert "line 2: skipped: not valid JSON" in result.stderr
    assert "line 3: skipped: 'contexts' must be a list of strings" in result.stderr
    assert "[#" not in result.stderr  # no progress bar when stderr is not a terminal
    scored = read_jsonl(out)
    assert [r["id"] for r in scored] == [1, 4, 5]
    for row in scored[:2]:
        for metric in ("faithfulness", "answer_relevancy", "context_relevancy"):
            assert 0.0 <= row[metric] <= 1.0
    empty = scored[2]
    assert empty["faithfulness"] is None and empty["faithfulness_error"] == "no_contexts"
    assert empty["context_relevancy"] is None and empty["context_relevancy_error"] == "no_contexts"
    # The summary: 3 rows scored for answer relevancy, 2 for faithfulness and one failure named.
    lines = {line.split()[0]: line for line in result.stdout.splitlines() if line.strip()}
    assert lines["faithfulness"].split()[1:2] == ["2"] and "no_contexts x1" in lines["faithfulness"]
    assert lines["answer_relevancy"].split()[1] == "3"
    assert "95% CI (t)" in result.stdout


def test_metrics_option_limits_the_work(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [{"question": "Q?", "contexts": ["C."], "answer": "A."}])
    out = tmp_path / "out.jsonl"
    assert score("--input", source, "--output", out, "--metrics", "context_relevancy").returncode == 0
    row = read_jsonl(out)[0]
    assert "context_relevancy" in row and "faithfulness" not in row


def test_csv_with_ragas_column_names_scores_like_jsonl(tmp_path: Path) -> None:
    jsonl = dataset(tmp_path / "rows.jsonl", made_up=False)
    source = tmp_path / "rows.csv"
    with source.open("w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "user_input", "retrieved_contexts", "response", "reference"])
        for i, (q, c, good, _) in enumerate(FACTS):
            # A context with a comma, quotes and a newline survives CSV quoting and the JSON array.
            writer.writerow([i, q, json.dumps([c], ensure_ascii=False), good, good])
    assert score("--input", jsonl, "--output", tmp_path / "a.jsonl").returncode == 0
    result = score("--input", source, "--output", tmp_path / "b.jsonl")
    assert result.returncode == 0, result.stderr
    ours, theirs = read_jsonl(tmp_path / "a.jsonl"), read_jsonl(tmp_path / "b.jsonl")
    assert [r["faithfulness"] for r in ours] == [r["faithfulness"] for r in theirs]
    assert theirs[0]["user_input"] == FACTS[0][0] and theirs[0]["retrieved_contexts"] == [FACTS[0][1]]


def test_csv_bad_contexts_cell_is_a_bad_row(tmp_path: Path) -> None:
    source = tmp_path / "rows.csv"
    source.write_text('question,contexts,answer\nQ?,not json,A.\n"Q2?","[""C.""]",A.\n', encoding="utf-8")
    result = score("--input", source, "--output", tmp_path / "out.jsonl")
    assert result.returncode == 0
    assert "line 2: skipped: 'contexts' is not a JSON array of strings" in result.stderr
    assert len(read_jsonl(tmp_path / "out.jsonl")) == 1


def test_both_naming_schemes_disagreeing_is_a_bad_row(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [
        {"question": "Q?", "user_input": "Other?", "contexts": ["C."], "answer": "A."}])
    result = score("--input", source, "--output", tmp_path / "out.jsonl")
    assert "'question' and 'user_input' differ" in result.stderr


def test_gate_passes_faithful_answers_and_fails_made_up_ones(tmp_path: Path) -> None:
    gate = ["--fail-under", "faithfulness=0.7", "answer_relevancy=0.5"]
    good = score("--input", dataset(tmp_path / "good.jsonl", False), "--output", tmp_path / "g.jsonl", *gate)
    assert good.returncode == 0, good.stdout + good.stderr
    assert "failed --fail-under" not in good.stdout
    bad = score("--input", dataset(tmp_path / "bad.jsonl", True), "--output", tmp_path / "b.jsonl", *gate)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    failed = bad.stdout.split("failed --fail-under:")[1].strip().splitlines()
    assert len(failed) == 1 and failed[0].strip().startswith("faithfulness: mean ")
    mean = float(failed[0].split("mean ")[1].split()[0])
    assert f"is {0.7 - mean:.3f} below the gate 0.7" in failed[0]


def test_gate_on_a_metric_with_no_score_fails(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [{"question": "Q?", "contexts": [], "answer": "A thing."}])
    result = score("--input", source, "--output", tmp_path / "o.jsonl", "--fail-under", "faithfulness=0.1")
    assert result.returncode == 1
    assert "faithfulness: no row was scored" in result.stdout


@pytest.mark.parametrize("spec", ["faithfulness", "faithfulness=high", "faithfulness=2", "bleu=0.5"])
def test_bad_gate_is_a_usage_error(tmp_path: Path, spec: str) -> None:
    source = dataset(tmp_path / "in.jsonl", False)
    result = score("--input", source, "--output", tmp_path / "o.jsonl", "--fail-under", spec)
    assert result.returncode == 2 and "--fail-under" in result.stderr


def test_baseline_pairs_rows_by_id_and_reports_the_drop(tmp_path: Path) -> None:
    before = tmp_path / "before.jsonl"
    assert score("--input", dataset(tmp_path / "good.jsonl", False), "--output", before).returncode == 0
    # The new run has its rows in another order and one row the baseline lacks.
    rows = read_jsonl(dataset(tmp_path / "bad.jsonl", True))[::-1]
    rows.append({"id": 99, "question": "Q?", "contexts": ["C."], "answer": "A."})
    result = score("--input", write_jsonl(tmp_path / "now.jsonl", rows), "--output", tmp_path / "now.out",
                   "--baseline", before)
    assert result.returncode == 0, result.stderr
    comparison = result.stdout.split("against ")[1]
    row = next(line.split() for line in comparison.splitlines() if line.startswith("faithfulness"))
    paired_n, baseline_mean, now_mean, difference = int(row[1]), float(row[2]), float(row[3]), float(row[4])
    assert paired_n == len(FACTS)
    assert difference == pytest.approx(now_mean - baseline_mean, abs=0.002) and difference < -0.5
    assert "1 scored rows had no match in the baseline" in comparison


def test_baseline_without_ids_pairs_by_question_and_answer(tmp_path: Path) -> None:
    rows = [{"question": q, "contexts": [c], "answer": good} for q, c, good, _ in FACTS]
    before = tmp_path / "before.jsonl"
    assert score("--input", write_jsonl(tmp_path / "a.jsonl", rows), "--output", before).returncode == 0
    result = score("--input", tmp_path / "a.jsonl", "--output", tmp_path / "b.jsonl", "--baseline", before)
    row = next(line.split() for line in result.stdout.split("against ")[1].splitlines()
               if line.startswith("faithfulness"))
    # The same rows scored twice by a deterministic judge: six pairs, no difference, nothing to test.
    assert row[1] == str(len(FACTS)) and row[4] == "+0.000" and row[-1] == "-"


def test_t_quantiles_match_the_tables() -> None:
    for df, expected in ((1, 12.706), (2, 4.303), (5, 2.571), (10, 2.228), (30, 2.042), (1000, 1.962)):
        assert t_quantile(0.975, df) == pytest.approx(expected, abs=1e-3)


def test_mean_ci_and_paired_test() -> None:
    ci = mean_ci([0.2, 0.4, 0.6, 0.8])
    # mean 0.5, s = 0.2582, t(0.975, 3) = 3.1824: half-width 0.4108
    assert ci.mean == pytest.approx(0.5) and ci.low == pytest.approx(0.0892, abs=1e-4)
    assert ci.high == pytest.approx(0.9108, abs=1e-4)
    assert mean_ci([0.9, 1.0, 1.0]).high == 1.0  # cut to the scores' range
    assert mean_ci([0.5]).low is None
    # Wilcoxon signed-rank, normal approximation with continuity and tie corrections: W+ = 52.5, n = 10,
    # mean 27.5, variance 96.25 - 1.875 (ties) -> z = 2.522, p = 0.0117.
    assert wilcoxon_p(np.array([1.0, 2, 3, -1, 2, 1, 3, 4, 2, 1])) == pytest.approx(0.0117, abs=2e-4)
    assert paired([0.5, 0.6], [0.5, 0.6]).p_wilcoxon is None
    assert paired([0.9, 0.8, 0.7], [0.5, 0.5, 0.5]).diff.mean == pytest.approx(0.3)


def test_progress_bar_on_a_terminal(tmp_path: Path) -> None:
    import os
    import pty

    source = dataset(tmp_path / "in.jsonl", made_up=False)
    controller, terminal = pty.openpty()
    try:
        result = subprocess.run([sys.executable, "-m", "ragpulse.cli", "score", "--input", str(source), "--output",
                                 str(tmp_path / "out.jsonl"), "--metrics", "context_relevancy"],
                                stdout=subprocess.PIPE, stderr=terminal, timeout=120)
        os.close(terminal)
        seen = b""
        while True:
            try:
                chunk = os.read(controller, 4096)
            except OSError:  # the terminal's other end is closed: all was read
                break
            if not chunk:
                break
            seen += chunk
    finally:
        os.close(controller)
    assert result.returncode == 0
    assert f"[{'#' * 30}] {len(FACTS)}/{len(FACTS)} rows".encode() in seen
