"""The learned-combiner experiment under bench/ (judge_examples.py, judge_features.py,
train_local_judge.py): its generated examples, its features on obvious cases, its verdicts'
evidence, and that the training script writes the committed weights byte for byte.

Texts are written for these tests; no benchmark row.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.append(str(BENCH))

import judge_examples  # noqa: E402
import judge_features  # noqa: E402
import train_local_judge  # noqa: E402

from ragpulse.scorer.judge.base import RecordText, Usage  # noqa: E402
from ragpulse.scorer.judge.local import LexicalJudge  # noqa: E402
from ragpulse.scorer.sentences import context_sentences  # noqa: E402

CONTEXT = [
    "The Harbour Lighthouse was completed in 1872 and is 38 metres tall. "
    "The tower was designed by the engineer Margaret Collins. "
    "Its lamp was converted to electricity in 1931. "
    "The town bridge was built by Thomas Reid in 1905."
]


@pytest.fixture(scope="module")
def judge() -> LexicalJudge:
    return LexicalJudge()


def row(judge: LexicalJudge, statement: str, contexts: list[str] = CONTEXT) -> dict[str, float]:
    aligned = judge.alignments(RecordText("", contexts, statement), [statement], Usage())
    return dict(zip(judge_features.FEATURES, judge_features.feature_rows(aligned)[0], strict=True))


def test_examples_are_seeded_balanced_and_broken_ones_are_not_context_sentences() -> None:
    first = judge_examples.examples(300, seed=3)
    assert first == judge_examples.examples(300, seed=3)
    assert first != judge_examples.examples(300, seed=4)
    labels = [ex.label for ex in first]
    assert 0.4 < sum(labels) / len(labels) < 0.6
    for ex in first:
        if ex.label == 0:
            assert ex.statement not in context_sentences(ex.contexts)


def test_features_see_a_changed_number_a_foreign_name_and_a_negation(judge: LexicalJudge) -> None:
    true = row(judge, "The lighthouse was completed in 1872.")
    assert true["numbers_all"] == 1.0 and true["negation_differs"] == 0.0
    assert row(judge, "The lighthouse was completed in 1878.")["numbers_all"] == 0.0
    assert row(judge, "The tower was designed by the engineer Margaret Hughes.")["names_all"] == 0.5
    assert row(judge, "The lighthouse was not completed in 1872.")["negation_differs"] == 1.0
    assert row(judge, "灯台は1872年に完成しませんでした。", ["灯台は1872年に完成しました。"])["negation_differs"] == 1.0


def test_words_recombined_from_two_sentences_do_not_stand_together(judge: LexicalJudge) -> None:
    stated = row(judge, "The tower was designed by the engineer Margaret Collins.")
    spliced = row(judge, "The tower was built by Thomas Reid in 1931.")
    assert stated["pairs_together"] == 1.0
    # tower~built and Reid~1931 come from different sentences; built~Thomas~Reid from one.
    assert spliced["pairs_together"] == 0.5


def test_combined_verdicts_name_their_evidence() -> None:
    net = judge_features.load_network(train_local_judge.WEIGHTS_FILE)
    combined = judge_features.CombinedJudge(net)
    rec = RecordText("Who designed it?", CONTEXT, "")
    verdicts = combined.verify(rec, ["Margaret Collins designed the tower.", "It is 38 metres tall."], Usage())
    assert [v.evidence for v in verdicts] == [
        "The tower was designed by the engineer Margaret Collins.",
        "The Harbour Lighthouse was completed in 1872 and is 38 metres tall.",
    ]
    assert all(0.0 <= v.support <= 1.0 for v in verdicts)
    wrong = combined.verify(rec, ["Margaret Collins designed the tower in 1999."], Usage())[0]
    assert wrong.support < verdicts[0].support


@pytest.mark.slow
def test_training_writes_the_committed_weights_byte_for_byte(tmp_path: Path) -> None:
    committed = train_local_judge.WEIGHTS_FILE.read_bytes()
    fitted_on = json.loads(committed)["fitted_on"]
    python = f"Python {sys.version_info.major}.{sys.version_info.minor}.{sys.version_info.micro} "
    if python not in fitted_on:
        pytest.skip(f"weights were fitted on another Python's pydoc_data ({fitted_on})")
    out = tmp_path / "weights.json"
    assert train_local_judge.main(["--out", str(out)]) == 0
    assert hashlib.sha256(out.read_bytes()).hexdigest() == hashlib.sha256(committed).hexdigest()
