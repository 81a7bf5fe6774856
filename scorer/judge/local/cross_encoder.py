"""The learned judge's cross-encoder, run with onnxruntime: it reads a pair of texts and answers two questions.

- support(evidence, statement): does the evidence entail the statement;
- answers(question, sentence): does the sentence give what the question asks.

The weights are the first layers of multilingual-e5-small with two heads, trained by
train/train.py from public data (train/manifest.json), exported by train/export_onnx.py and shipped
beside this module (weights/, sha256 checked at load). No torch and no download: numpy gathers the
embeddings and onnxruntime runs the encoder with int8 matrix products (the `learned` extra). Pair
results are cached by content, so contexts that recur across records cost nothing the second time.
"""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path

import numpy as np

from ragpulse.scorer.bounded_cache import BoundedCache
from ragpulse.scorer.judge.local.model import ModelLoadError, sha256_of

WEIGHTS_DIR = Path(__file__).with_name("weights")
EMBEDDINGS_FILE = "cross-encoder.npz"
GRAPH_FILE = "cross-encoder.onnx"
TOKENIZER_FILE = "cross-encoder-tokenizer.json"
TASKS = ("support", "answers")
# The lengths the heads were trained on (train/train.py MAX_LEN): longer pairs are cut, longest
# side first, as in training.
MAX_LEN = {"support": 160, "answers": 96}
BATCH = 32
# ~100 bytes an entry; pairs recur when the same chunks are retrieved again.
CACHE_SIZE = 65536


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

        try:
            import onnxruntime as ort
        except ImportError as exc:
            raise ModelLoadError("the learned judge runs on onnxruntime, which is not installed: "
                                 "pip install 'ragpulse[learned]'") from exc
        root = root if root is not None else WEIGHTS_DIR
        sums = expected_sha256(root)
        embeddings_path = _checked(root, EMBEDDINGS_FILE, sums)
        graph_path = _checked(root, GRAPH_FILE, sums)
        tokenizer_path = _checked(root, TOKENIZER_FILE, sums)
        self.model_id = f"ragpulse-cross-encoder@{sums[GRAPH_FILE][:12]}"
        with np.load(embeddings_path) as z:
            self._words_q, self._words_scale = z["word_q"], z["word_scale"]
            self._pos, self._type = z["pos"], z["type"]
        options = ort.SessionOptions()
        # One thread a session: the scorer runs records side by side, and one record's pairs are a
        # batch or two, too small to gain from splitting one product across cores.
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.enable_cpu_mem_arena = False
        self._session = ort.InferenceSession(str(graph_path), options, providers=["CPUExecutionProvider"])
        # One tokenizer for both tasks (each instance holds ~42 MB), its truncation set per call under
        # a lock, since the setting is the instance's.
        self._tokenizer = Tokenizer.from_file(str(tokenizer_path))
        self._tokenizer.no_padding()
        self._tokenizer_lock = threading.Lock()
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
        with self._tokenizer_lock:
            self._tokenizer.enable_truncation(MAX_LEN[task], strategy="longest_first")
            encodings = self._tokenizer.encode_batch(pairs)
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
        x = self._words_q[ids].astype(np.float32) * self._words_scale[ids] + self._pos[:n] + self._type
        bias = ((1.0 - mask) * -1e9)[:, None, None, :]
        return self._session.run(None, {"x": x, "bias": bias, "mask": mask})[0]
