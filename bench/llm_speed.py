"""Speed of the local LLM server's engine: prompt and generated tokens per second.

    RAGPULSE_LLM_VENV=~/.cache/ragpulse/venv-llm \
        ~/.cache/ragpulse/venv-llm/bin/python bench/llm_speed.py [--runs 3] [--threads 2]

Runs in the LLM venv (deploy/llm/install.sh), on the model the openai judge's tests and
benchmarks use, so a judge's seconds per record can be read against the machine it ran on
(a WikiEval record is ~1,000-4,000 prompt tokens). Medians of --runs, measured in one run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
import llm_server  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    import llama_cpp

    path = llm_server.model_path()
    llm_server.check_model(path)
    llm = llama_cpp.Llama(model_path=str(path), n_ctx=2048, n_threads=args.threads,
                          n_threads_batch=args.threads, verbose=False)
    prompt = llm.tokenize(("The Eiffel Tower is a wrought-iron lattice tower in Paris. " * 40).encode())
    prompt_rate, gen_rate = [], []
    for _ in range(args.runs):
        llm.reset()
        start = time.perf_counter()
        llm.eval(prompt)
        prompt_rate.append(len(prompt) / (time.perf_counter() - start))
        llm.reset()
        start = time.perf_counter()
        out = llm.create_completion("Q: Name three cities in France.\nA:", max_tokens=48, temperature=0)
        gen_rate.append(out["usage"]["completion_tokens"] / (time.perf_counter() - start))
    print(f"prompt ({len(prompt)} tokens): median {statistics.median(prompt_rate):.1f} tokens/s")
    print(f"generation (48 tokens, short prompt): median {statistics.median(gen_rate):.1f} tokens/s")


if __name__ == "__main__":
    main()
