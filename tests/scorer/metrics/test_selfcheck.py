"""SelfCheck consistency: samples from the record or a generator, the weakest sentence named,
English and Japanese with the local judge, one verify call per sample with the openai judge, and
every way it cannot be computed counted as a failure."""

from __future__ import annotations

import functools

import httpx
import openai
import pytest
import yaml
from scripted_chat_client import ScriptedChatClient

from ragpulse.config import ConfigError, load_config
from ragpulse.core.wire import Record, Sampling
from ragpulse.scorer.config import ScorerConfig
from ragpulse.scorer.judge.base import RecordText, Usage
from ragpulse.scorer.judge.local.judge import LexicalJudge
from ragpulse.scorer.judge.openai.config import OpenAIJudgeConfig
from ragpulse.scorer.judge.openai.generator import SampleGenerator
from ragpulse.scorer.judge.openai.judge import OpenAIJudge
from ragpulse.scorer.metrics.selfcheck import selfcheck
from ragpulse.scorer.record_text import record_text
from ragpulse.scorer.score import metric_functions, score_text
from ragpulse.scorer.selfcheck_config import SampleGeneratorConfig, SelfCheckConfig

EN = dict(
    question="When was the Eiffel Tower completed?",
    answer="The Eiffel Tower was completed in 1889 for the World's Fair. It was designed by Marco Rossi in Rome.",
    samples=["The Eiffel Tower was completed in 1889 for the World's Fair in Paris.",
             "Built for the World's Fair, the Eiffel Tower was completed in 1889.",
             "The Eiffel Tower, completed in 1889, was the entrance to the World's Fair."])
JA = dict(
    question="日本の首都はどこですか？",
    answer="日本の首都は東京です。東京の人口は約300万人です。",
    samples=["日本の首都は東京です。", "首都は東京です。東京の人口は約1400万人です。", "東京が日本の首都です。"])


def outcome(judge, rec: RecordText, config: ScorerConfig | None = None):
    return score_text(judge, metric_functions(config or ScorerConfig(), ["selfcheck"]), rec)["selfcheck"]


@pytest.fixture(scope="module")
def local() -> LexicalJudge:
    return LexicalJudge()


@pytest.mark.parametrize("case", [EN, JA], ids=["en", "ja"])
def test_sentence_the_samples_do_not_repeat_is_the_weakest(local: LexicalJudge, case: dict) -> None:
    rec = RecordText(case["question"], [], case["answer"], samples=case["samples"])
    result = outcome(local, rec)
    first, made_up = result.detail["sentences"]
    assert first["score"] > 0.5 and made_up["score"] < 0.1
    assert result.detail["weakest_sentence"] == made_up["sentence"]
    assert result.detail["min_sentence_score"] == made_up["score"]
    assert result.value == pytest.approx((first["score"] + made_up["score"]) / 2, abs=1e-3)


def test_consistent_answer_scores_higher(local: LexicalJudge) -> None:
    consistent = RecordText(EN["question"], [], "The Eiffel Tower was completed in 1889 for the World's Fair.",
                            samples=EN["samples"])
    mixed = RecordText(EN["question"], [], EN["answer"], samples=EN["samples"])
    assert outcome(local, consistent).value > outcome(local, mixed).value


def test_cannot_compute_is_a_counted_failure(local: LexicalJudge) -> None:
    assert outcome(local, RecordText("Q?", [], "An answer.")).error == "no_samples"
    assert outcome(local, RecordText("Q?", [], "An answer.", samples=["One."])).error == "too_few_samples"
    assert outcome(local, RecordText("Q?", [], "An answer.", samples=["One.", " "])).error == "too_few_samples"
    assert outcome(local, RecordText("Q?", [], " ", samples=["One.", "Two."])).error == "empty_answer"


def test_samples_travel_as_a_span_attribute() -> None:
    def record(attributes: dict) -> Record:
        return Record(trace_id="t", span_id="s", service="svc", question="q", contexts=["c"], answer="a",
                      time_unix_nano=0, sampling=Sampling(1.0, 1.0, "test"), attributes=attributes)

    text = record_text(Record.from_json(record({"rag.samples": ["x", "y"], "rag.reference": "r"}).to_json()))
    assert text.samples == ["x", "y"] and text.reference == "r"
    assert record_text(record({"rag.samples": "x"})).samples is None
    assert record_text(record({"rag.samples": [1, 2]})).samples is None


def scripted_openai(reply) -> tuple[ScriptedChatClient, OpenAIJudgeConfig]:
    return ScriptedChatClient(reply), OpenAIJudgeConfig(model="m", base_url="http://127.0.0.1:1/v1", api_key="k",
                                                        max_retries=0, temperature=1.0)


def test_generator_draws_n_samples_each_with_its_own_seed(local: LexicalJudge) -> None:
    client, config = scripted_openai(lambda system, data: EN["samples"][0])
    generator = SampleGenerator(config, 3, client)
    rec = RecordText(EN["question"], ["The Eiffel Tower was completed in 1889."], EN["answer"])
    _, detail = selfcheck(local, rec, Usage(), source=generator)
    assert detail["samples"] == 3
    assert [r["seed"] for r in client.requests] == [0, 1, 2]
    assert all(r["temperature"] == 1.0 for r in client.requests)
    sent = client.requests[0]["messages"][1]["content"]
    assert EN["question"] in sent and "1889" in sent  # the question with its contexts


def test_generator_failure_is_a_counted_failure(local: LexicalJudge) -> None:
    def down(system: str, data: dict) -> str:
        raise openai.APIConnectionError(request=httpx.Request("POST", "http://127.0.0.1:1/v1"))

    client, config = scripted_openai(down)
    metric = functools.partial(selfcheck, source=SampleGenerator(config, 3, client))
    result = score_text(local, {"selfcheck": metric}, RecordText("Q?", [], "An answer."))["selfcheck"]
    assert result.value is None and result.error == "generator_connection_error"


def test_configured_generator_is_built_only_when_set() -> None:
    generator = SampleGeneratorConfig(model="m", base_url="http://127.0.0.1:1/v1", api_key="k", n=4)
    built = metric_functions(ScorerConfig(selfcheck=SelfCheckConfig(generator=generator)), ["selfcheck"])
    source = built["selfcheck"].keywords["source"]
    assert isinstance(source, SampleGenerator) and source.n == 4 and source.config.temperature == 1.0
    assert metric_functions(ScorerConfig(), ["selfcheck"])["selfcheck"].keywords["source"] is None


def test_openai_judge_checks_all_sentences_of_one_sample_in_one_call() -> None:
    def model(system: str, data: dict) -> dict:
        evidence = data["contexts"][0]
        return {"verdicts": [{"id": int(k), "supported": s.split()[-1].rstrip(".") in evidence}
                             for k, s in data["statements"].items()]}

    client = ScriptedChatClient(model)
    judge = OpenAIJudge(OpenAIJudgeConfig(model="m", base_url="http://127.0.0.1:1/v1", api_key="k", max_retries=0),
                        client=client)  # type: ignore[arg-type]
    rec = RecordText("Q?", [], "Paris is in France. Berlin is in Spain.",
                     samples=["Paris is in France.", "Paris, France.", "Berlin is a city in Germany."])
    result = outcome(judge, rec)
    assert len(client.requests) == 3  # one per sample, both sentences (and the canary) in each
    assert result.detail["weakest_sentence"] == "Berlin is in Spain."
    assert [s["score"] for s in result.detail["sentences"]] == [pytest.approx(2 / 3, abs=1e-3), 0.0]


def test_config_checks(tmp_path) -> None:
    path = tmp_path / "c.yaml"
    generator = {"model": "m", "base_url": "http://127.0.0.1:1/v1", "api_key": "k"}
    for settings, message in (({**generator, "temperature": 0.0}, "scorer.selfcheck.generator.temperature"),
                              ({**generator, "n": 1}, "min_samples")):
        path.write_text(yaml.safe_dump({"scorer": {"selfcheck": {"generator": settings}}}))
        with pytest.raises(ConfigError, match=message):
            load_config(path, environ={})
    path.write_text(yaml.safe_dump({"scorer": {"selfcheck": {"generator": {**generator, "n": 3}}}}))
    assert load_config(path, environ={}).scorer.selfcheck.generator.n == 3
