"""Fit the learned-combiner experiment (bench/judge_features.py) on generated examples.

    python bench/train_local_judge.py [--examples 8000] [--seed 0] [--hidden 0] [--out PATH] [--check]

The examples come from bench/judge_examples.py (Python's documentation and fact sheets written from
templates; no benchmark row). Each becomes one row of statement features, from the judge's own
alignment of the statement to its contexts (LexicalJudge.alignments); the model is logistic
regression (--hidden 0) or a one-hidden-layer tanh network, fitted by full-batch gradient steps
from a seeded start, so the same command writes the same bytes (--check retrains and compares).
Measure the result with `bench/quality_peer.py --combiner PATH`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import numpy as np
from judge_examples import examples
from judge_features import FEATURES, feature_rows, network

from ragpulse.scorer.judge.base import RecordText, Usage
from ragpulse.scorer.judge.local import LexicalJudge

WEIGHTS_FILE = Path(__file__).resolve().parent / "data" / "local_judge_combiner.json"

SUPPORT = FEATURES.index("support")
# Written with this many significant digits: enough for the scores, and the same bytes on any
# machine whose float arithmetic differs in the last bits.
DIGITS = 6
L2 = 1e-3
STEPS = 3000
RATE = 0.5


def example_rows(count: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Features and labels of `count` generated examples."""
    judge = LexicalJudge()
    rows, labels = [], []
    for ex in examples(count, seed):
        aligned = judge.alignments(RecordText("", ex.contexts, ex.statement), [ex.statement], Usage())
        rows.append(feature_rows(aligned)[0])
        labels.append(ex.label)
    return np.stack(rows), np.array(labels, dtype=np.float64)


def _forward(params: list[np.ndarray], x: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    acts = [x]
    for i in range(0, len(params), 2):
        x = x @ params[i] + params[i + 1]
        if i + 2 < len(params):
            x = np.tanh(x)
        acts.append(x)
    return 1.0 / (1.0 + np.exp(-x[:, 0])), acts


def fit(x: np.ndarray, y: np.ndarray, hidden: int, seed: int) -> list[np.ndarray]:
    """Weights of a logistic output over `hidden` tanh units (none: logistic regression), by full-batch
    gradient descent on the mean log loss with an L2 penalty."""
    rng = np.random.default_rng(seed)
    sizes = [x.shape[1], *([hidden] if hidden else []), 1]
    params: list[np.ndarray] = []
    for a, b in zip(sizes, sizes[1:], strict=False):
        params += [rng.normal(0, 1 / np.sqrt(a), (a, b)) if hidden else np.zeros((a, b)), np.zeros(b)]
    for _ in range(STEPS):
        p, acts = _forward(params, x)
        delta = ((p - y) / len(y))[:, None]
        grads: list[np.ndarray] = []
        for i in range(len(params) - 2, -1, -2):
            grads = [acts[i // 2].T @ delta + L2 * params[i], delta.sum(axis=0), *grads]
            if i:
                delta = (delta @ params[i].T) * (1 - acts[i // 2] ** 2)
        params = [w - RATE * g for w, g in zip(params, grads, strict=True)]
    return params


def auc(scores: np.ndarray, labels: np.ndarray) -> float:
    pos, neg = scores[labels == 1], scores[labels == 0]
    return float(((pos[:, None] > neg[None, :]) + 0.5 * (pos[:, None] == neg[None, :])).mean())


def _rounded(a: np.ndarray) -> list:
    return np.vectorize(lambda v: float(f"{v:.{DIGITS}g}"), otypes=[float])(a).tolist()


def weights_json(x: np.ndarray, y: np.ndarray, hidden: int, seed: int, count: int) -> str:
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0
    mean, scale = np.array(_rounded(mean)), np.array(_rounded(scale))
    params = fit((x - mean) / scale, y, hidden, seed)
    data = {
        "features": list(FEATURES),
        "fitted_on": f"bench/judge_examples.py examples({count}, seed={seed}): "
                     f"Python {sys.version_info.major}.{sys.version_info.minor}.{sys.version_info.micro} "
                     "pydoc_data.topics prose "
                     "and template fact sheets; no benchmark rows",
        "mean": mean.tolist(),
        "scale": scale.tolist(),
        "layers": [{"w": _rounded(params[i]), "b": _rounded(params[i + 1])} for i in range(0, len(params), 2)],
    }
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--examples", type=int, default=8000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--hidden", type=int, default=0, help="hidden tanh units; 0 for logistic regression")
    p.add_argument("--out", type=Path, default=WEIGHTS_FILE)
    p.add_argument("--check", action="store_true", help="retrain and compare with --out instead of writing it")
    args = p.parse_args(argv)
    x, y = example_rows(args.examples, args.seed)
    text = weights_json(x, y, args.hidden, args.seed, args.examples)
    # Held out from fitting: a second set from another seed, for the synthetic AUC only.
    tx, ty = example_rows(max(1000, args.examples // 4), args.seed + 1)
    model = network(json.loads(text))
    print(f"synthetic held-out AUC: combiner {auc(model.support(tx), ty):.3f}, "
          f"hand-made {auc(tx[:, SUPPORT], ty):.3f} ({len(ty)} examples)")
    sha = hashlib.sha256(text.encode()).hexdigest()
    if args.check:
        same = args.out.read_text(encoding="utf-8") == text
        print(f"{args.out}: {'identical' if same else 'DIFFERS'} (retrained sha256 {sha})")
        return 0 if same else 1
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out}, sha256 {sha}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
