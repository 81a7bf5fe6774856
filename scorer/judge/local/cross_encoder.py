"""The learned judge's cross-encoder, run with numpy: it reads a pair of texts and answers two questions.

- support(evidence, statement): does the evidence entail the statement;
- answers(question, sentence): does the sentence give what the question asks.

The weights are the first layers of multilingual-e5-small with two heads, trained by
train/train.py from public data (train/manifest.json) and shipped beside this module
(weights/, sha256 checked at load). No torch and no download: the forward pass is a few numpy
matrix products. Pair results are cached by content, so contexts that recur across records cost
nothing the second time.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ragpulse.scorer.bounded_cache import BoundedCache
from ragpulse.scorer.judge.local.model import ModelLoadError, sha256_of

WEIGHTS_DIR = Path(__file__).with_name("weights")
MODEL_FILE = "cross-encoder.npz"
TOKENIZER_FILE = "cross-encoder-tokenizer.json"
TASKS = ("support", "answers")
# The lengths the heads were trained on (train/train.py MAX_LEN): longer pairs are cut, longest
# side first, as in training.
MAX_LEN = {"support": 160, "answers": 96}
BATCH = 32
# ~100 bytes an entry; pairs recur when the same chunks are retrieved again.
CACHE_SIZE = 65536


def _gelu(x: np.ndarray) -> np.ndarray:
    """GELU by its tanh form, 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), in place where it can.
    The model was trained with the exact (erf) GELU; the tanh form differs by under 1e-3 and costs a
    sixth of an erf built from numpy's ufuncs (numpy has no erf): on a batch's feed-forward
    activations that erf was a quarter of the forward pass (bench/RESULTS.md)."""
    y = x * x
    y *= np.float32(0.044715)
    y += 1.0
    y *= x
    y *= np.float32(0.7978845608028654)
    np.tanh(y, out=y)
    y += 1.0
    y *= x
    y *= np.float32(0.5)
    return y


def _layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    mu = x.mean(-1, keepdims=True)
    xc = x - mu
    var = (xc * xc).mean(-1, keepdims=True)
    return xc / np.sqrt(var + eps) * w + b


@dataclass
class _Layer:
    qkv_w: np.ndarray  # (hidden, 3 * hidden): the three projections in one product
    qkv_b: np.ndarray
    ao_w: np.ndarray
    ao_b: np.ndarray
    aln_w: np.ndarray
    aln_b: np.ndarray
    fi_w: np.ndarray
    fi_b: np.ndarray
    fo_w: np.ndarray
    fo_b: np.ndarray
    oln_w: np.ndarray
    oln_b: np.ndarray


def expected_sha256(root: Path) -> dict[str, str]:
    """The checksums shipped beside the weights (weights/SHA256SUMS, `sha256sum` format)."""
    sums = root / "SHA256SUMS"
    if not sums.is_file():
        raise ModelLoadError(f"{sums} is missing; reinstall ragpulse")
    out = {}
    for line in sums.read_text(encoding="utf-8").splitlines():
        if line.strip():
            digest, name = line.split(maxsplit=1)
            out[name.lstrip("*")] = digest
    return out


def _checked(root: Path, name: str, sums: dict[str, str]) -> Path:
    path = root / name
    if not path.is_file():
        raise ModelLoadError(f"model file {path} is missing; reinstall ragpulse")
    if name not in sums:
        raise ModelLoadError(f"{root / 'SHA256SUMS'} lists no checksum for {name}")
    actual = sha256_of(path)
    if actual != sums[name]:
        raise ModelLoadError(
            f"checksum mismatch for {path}: sha256 {actual}, expected {sums[name]}; reinstall ragpulse")
    return path


class CrossEncoder:
    def __init__(self, root: Path | None = None) -> None:
        from tokenizers import Tokenizer

        root = root if root is not None else WEIGHTS_DIR
        sums = expected_sha256(root)
        model_path = _checked(root, MODEL_FILE, sums)
        tokenizer_path = _checked(root, TOKENIZER_FILE, sums)
        self.model_id = f"ragpulse-cross-encoder@{sums[MODEL_FILE][:12]}"
        with np.load(model_path) as z:
            a = {k: z[k] for k in z.files}
        self._words_q = a["word_q"]
        self._words_scale = a["word_scale"].astype(np.float32)
        self._heads = int(a["heads"])
        self._eps = float(a["eps"])

        def f32(key: str) -> np.ndarray:
            return a[key].astype(np.float32)

        self._pos, self._type = f32("pos"), f32("type")
        self._eln = (f32("eln_w"), f32("eln_b"))
        self._layers = []
        for i in range(int(a["layers"])):
            def g(n: str, i: int = i) -> np.ndarray:
                return f32(f"l{i}.{n}")
            self._layers.append(_Layer(
                np.ascontiguousarray(np.concatenate([g("q_w"), g("k_w"), g("v_w")]).T),
                np.concatenate([g("q_b"), g("k_b"), g("v_b")]),
                np.ascontiguousarray(g("ao_w").T), g("ao_b"), g("aln_w"), g("aln_b"),
                np.ascontiguousarray(g("fi_w").T), g("fi_b"), np.ascontiguousarray(g("fo_w").T), g("fo_b"),
                g("oln_w"), g("oln_b")))
        self._head = (f32("head_w1"), f32("head_b1"), f32("head_w2"), f32("head_b2"))
        self._tokenizers = {}
        for task, n in MAX_LEN.items():
            tok = Tokenizer.from_file(str(tokenizer_path))
            tok.no_padding()
            tok.enable_truncation(n, strategy="longest_first")
            self._tokenizers[task] = tok
        self._cache: BoundedCache[bytes, float] = BoundedCache(CACHE_SIZE)

    def support(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        """P(the evidence entails the statement) for each (evidence, statement)."""
        return self.scores("support", pairs)

    def answers(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        """P(the sentence gives what the question asks) for each (question, sentence)."""
        return self.scores("answers", pairs)

    def scores(self, task: str, pairs: list[tuple[str, str]]) -> np.ndarray:
        out = np.zeros(len(pairs), np.float32)
        keys = [hashlib.blake2b(f"{task}\x00{a}\x00{b}".encode(), digest_size=16).digest() for a, b in pairs]
        todo: dict[bytes, int] = {}
        for i, key in enumerate(keys):
            hit = self._cache.get(key)
            if hit is not None:
                out[i] = hit
            elif key not in todo:
                todo[key] = i
        if todo:
            fresh = self._forward(task, [pairs[i] for i in todo.values()])
            for key, value in zip(todo, fresh.tolist(), strict=True):
                self._cache.put(key, value)
            found = dict(zip(todo, fresh.tolist(), strict=True))
            for i, key in enumerate(keys):
                if key in found:
                    out[i] = found[key]
        return out

    def _forward(self, task: str, pairs: list[tuple[str, str]]) -> np.ndarray:
        encodings = self._tokenizers[task].encode_batch(pairs)
        ids = [np.asarray(e.ids, np.int64) for e in encodings]
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        out = np.zeros(len(ids), np.float32)
        column = TASKS.index(task)
        for s in range(0, len(order), BATCH):
            idx = order[s:s + BATCH]
            logits = self._logits([ids[i] for i in idx])
            out[idx] = 1.0 / (1.0 + np.exp(-logits[:, column]))
        return out

    def _logits(self, batch: list[np.ndarray]) -> np.ndarray:
        b, n = len(batch), max(len(t) for t in batch)
        ids = np.ones((b, n), np.int64)  # <pad>
        mask = np.zeros((b, n), np.float32)
        for r, t in enumerate(batch):
            ids[r, :len(t)] = t
            mask[r, :len(t)] = 1.0
        # The dense layers run on (tokens, hidden): one matrix product per weight instead of one per
        # pair, about 1.5x faster; only attention needs the pairs apart.
        x = self._words_q[ids].astype(np.float32) * self._words_scale[ids] + self._pos[:n] + self._type
        x = x.reshape(b * n, -1)
        x = _layer_norm(x, *self._eln, self._eps)
        h = x.shape[-1]
        hd = h // self._heads
        bias = ((1.0 - mask) * -1e9)[:, None, None, :].astype(np.float32)
        scale = np.float32(1.0 / np.sqrt(hd))
        for ly in self._layers:
            qkv = (x @ ly.qkv_w + ly.qkv_b).reshape(b, n, 3, self._heads, hd).transpose(2, 0, 3, 1, 4)
            q, k, v = qkv[0], qkv[1], qkv[2]
            att = q @ k.transpose(0, 1, 3, 2)
            att *= scale
            att += bias
            att -= att.max(-1, keepdims=True)
            np.exp(att, out=att)
            att /= att.sum(-1, keepdims=True)
            ctx = (att @ v).transpose(0, 2, 1, 3).reshape(b * n, h)
            x = _layer_norm(x + ctx @ ly.ao_w + ly.ao_b, ly.aln_w, ly.aln_b, self._eps)
            f = x @ ly.fi_w
            f += ly.fi_b
            x = _layer_norm(x + _gelu(f) @ ly.fo_w + ly.fo_b, ly.oln_w, ly.oln_b, self._eps)
        x = x.reshape(b, n, h)
        pooled = (x * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
        w1, b1, w2, b2 = self._head
        return np.tanh(pooled @ w1 + b1) @ w2 + b2
