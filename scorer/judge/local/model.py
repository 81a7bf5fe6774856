"""The static token-embedding model behind the `local` judge, loaded from files a PyPI package ships.

The weights are WordLlama's `l2_supercat_256` (a 32k x 256 token-embedding table with the Llama 2
tokenizer), carried inside the `wordllama` wheel. We read the two files directly with safetensors
and tokenizers instead of calling `WordLlama.load`, because that loader falls back to downloading
from a model hub and its import configures the root logger. Nothing here touches the network.
"""

from __future__ import annotations

import hashlib
import importlib.util
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ragpulse.scorer.judge.base import JudgeError

# Pinned with the package version: a different file means different scores, so it is an error.
PACKAGE = "wordllama"
PACKAGE_VERSION = "0.4.0.post1"
MODEL_ID = "wordllama/l2_supercat_256@0.4.0.post1"
WEIGHTS = "weights/l2_supercat_256.safetensors"
WEIGHTS_SHA256 = "64b47a2dc493cb8e85944076601189739852d7b64e0e1eedcb1937a251cd9fd5"
TOKENIZER = "tokenizers/l2_supercat_tokenizer_config.json"
TOKENIZER_SHA256 = "93248f2a9ec36c7b35f700a033d5f36228aae48db61aee31007fa49062cdeb68"
TENSOR_KEY = "embedding.weight"


class ModelLoadError(JudgeError):
    """The local model cannot be used (missing package, wrong file); the message says how to fix it."""

    def __init__(self, detail: str) -> None:
        super().__init__("model_unavailable", detail)


def package_dir(package: str = PACKAGE) -> Path:
    """Where the package's files are, found without importing it (importing wordllama has side
    effects on logging)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ModelLoadError(f"package {package!r} is not installed; pip install '{PACKAGE}=={PACKAGE_VERSION}'")
    return Path(next(iter(spec.submodule_search_locations)))


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def checked_file(path: Path, expected_sha256: str) -> Path:
    if not path.is_file():
        raise ModelLoadError(f"model file {path} is missing; reinstall '{PACKAGE}=={PACKAGE_VERSION}'")
    actual = sha256_of(path)
    if actual != expected_sha256:
        raise ModelLoadError(
            f"checksum mismatch for {path}: sha256 {actual}, expected {expected_sha256}; "
            f"install exactly '{PACKAGE}=={PACKAGE_VERSION}'"
        )
    return path


@dataclass
class StaticModel:
    """Mean-pooled static token embeddings: one table lookup per token, no neural network."""

    table: np.ndarray  # (vocab, dim) float32
    tokenizer: object  # tokenizers.Tokenizer

    def encode(self, texts: list[str]) -> np.ndarray:
        """Unnormalised mean of the token vectors of each text; zero rows for texts with no token."""
        out = np.zeros((len(texts), self.table.shape[1]), dtype=np.float32)
        encodings = self.tokenizer.encode_batch(texts, add_special_tokens=False)  # type: ignore[attr-defined]
        for i, enc in enumerate(encodings):
            ids = np.asarray(enc.ids, dtype=np.int64)
            if ids.size:
                np.clip(ids, 0, self.table.shape[0] - 1, out=ids)
                out[i] = self.table[ids].mean(axis=0)
        return out


def load_static_model(root: Path | None = None) -> StaticModel:
    from safetensors.numpy import load_file
    from tokenizers import Tokenizer

    root = root if root is not None else package_dir()
    weights = checked_file(root / WEIGHTS, WEIGHTS_SHA256)
    tokenizer_file = checked_file(root / TOKENIZER, TOKENIZER_SHA256)
    tensors = load_file(str(weights))
    if TENSOR_KEY not in tensors:
        raise ModelLoadError(f"{weights} has no tensor {TENSOR_KEY!r}")
    table = np.ascontiguousarray(tensors[TENSOR_KEY], dtype=np.float32)
    tokenizer = Tokenizer.from_file(str(tokenizer_file))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    # The BPE model caches its first 10,000 inputs under 256 bytes and never evicts them; with no
    # pre-tokenizer an input is a whole text, so in a scorer that sees distinct texts the cache is
    # native memory that never pays (a soak's RSS grew by ~60 MB while it filled). The judge caches
    # the embeddings of the texts and words it sees again itself (judge.py, bounded, LRU).
    tokenizer.model._resize_cache(0)
    return StaticModel(table=table, tokenizer=tokenizer)
