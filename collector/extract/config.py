"""Settings of extraction and trace assembly. Section `extract`."""

from __future__ import annotations

from dataclasses import dataclass, field

from ragpulse.core.settings import ConfigError, key, require_at_least

# Span conventions the collector reads; all but native are assembled from a whole trace.
CONVENTIONS = ("native", "openinference", "openllmetry", "genai")


@dataclass
class AssemblyConfig:
    """Buffering of multi-span traces (OpenInference, OpenLLMetry, GenAI) until they are complete."""

    # After the root span arrives, spans still in other exporters' batches get this long.
    grace_s: float = 2.0
    # A trace whose root never arrives (lost, or still open) is assembled this long after its first span.
    timeout_s: float = 30.0
    # Beyond any of these, the oldest trace is assembled early (counted) to make room.
    max_traces: int = 10_000
    # Encoded size of all buffered spans.
    max_bytes: int = 64 * 1024 * 1024
    # Further spans of a longer trace are dropped (counted); its root is always kept.
    max_spans_per_trace: int = 1_000

    def validate(self, where: str) -> None:
        require_at_least(key(where, "grace_s"), self.grace_s, 0)
        if self.timeout_s <= 0 or self.timeout_s < self.grace_s:
            raise ConfigError(
                f"{key(where, 'timeout_s')} must be above 0 and at least grace_s ({self.grace_s}), "
                f"got {self.timeout_s}"
            )
        for name in ("max_traces", "max_bytes", "max_spans_per_trace"):
            require_at_least(key(where, name), getattr(self, name), 1)


@dataclass
class ExtractConfig:
    # Contexts beyond this many characters in total are cut (the record says `truncated`).
    max_context_chars: int = 64_000
    # A longer question or answer is cut to this many characters (the record says `truncated`).
    max_question_chars: int = 8_000
    max_answer_chars: int = 16_000  # likewise for the answer
    # Span conventions read: native, openinference, openllmetry, genai.
    conventions: list[str] = field(default_factory=lambda: list(CONVENTIONS))
    assembly: AssemblyConfig = field(default_factory=AssemblyConfig)

    def validate(self, where: str) -> None:
        require_at_least(key(where, "max_context_chars"), self.max_context_chars, 100)
        require_at_least(key(where, "max_question_chars"), self.max_question_chars, 1)
        require_at_least(key(where, "max_answer_chars"), self.max_answer_chars, 1)
        for name in self.conventions:
            if name not in CONVENTIONS:
                raise ConfigError(
                    f"{key(where, 'conventions')}: unknown convention {name!r}; known: {', '.join(CONVENTIONS)}"
                )
