"""The `local` judge on the failure classes the issue names, one obvious case per language each.

Answer relevancy: restatements of the question, refusals, answers that describe the documents
instead of answering, long on-topic answers that miss the ask, incomplete answers, answers of the
wrong type. Faithfulness: supported paraphrases, details recombined from words found elsewhere in
the contexts, and the evidence each verdict names. Texts are written for these tests.
"""

from __future__ import annotations

import pytest

from ragpulse.scorer.judge.base import RecordText, Usage, Verdict
from ragpulse.scorer.judge.local import LexicalJudge
from ragpulse.scorer.judge.local.relevance import asked, question_parts
from ragpulse.scorer.judge.local.text import content_tokens
from ragpulse.scorer.metrics import METRICS
from ragpulse.scorer.sentences import context_sentences

EN_CONTEXT = [
    "A shallow clone copies only the table's metadata; its data files stay in the source table. "
    "Creating a shallow clone of a 2 TB table takes about 10 seconds, because no data is copied. "
    "Queries on a shallow clone run as fast as on the source table, since they read the same files.",
    "Audit logging is configured in the workspace settings under Security. Audit logs are kept for 90 days. "
    "The store sells bicycles and repairs them. Thomas Reid built the railway station in 1901.",
    "Margaret Collins designed the Harbour Lighthouse. The head office is in Leeds and is led by Anna Berg.",
]
JA_CONTEXT = [
    "会員ポイントの有効期限は、最後にポイントを獲得した日から1年間です。ポイントは1ポイント1円として使えます。"
    "会員登録は無料で、登録には公式アプリが必要です。",
    "本社は名古屋市にあり、代表者は山田花子です。本店の建物は1965年に田中一郎が設計しました。",
]

# A support bot's documents: its users ask in keywords and yes/no questions.
SUPPORT_CONTEXT = [
    "Audit logging is configured in the workspace settings under Security. Audit logs are delivered to a "
    "storage bucket you choose. Only workspace admins can enable audit log delivery.",
    "Personal access tokens expire after 90 days by default. Admins can set a maximum lifetime for new tokens "
    "in the admin console. Tokens can be revoked at any time from User Settings.",
]
SUPPORT_CONTEXT_JA = [
    "監査ログはワークスペース設定のセキュリティから設定します。監査ログは指定したストレージに配信されます。"
    "監査ログの配信を有効にできるのはワークスペース管理者だけです。",
    "個人アクセストークンの有効期限は既定で90日です。管理者は管理コンソールで新しいトークンの最長有効期間を"
    "設定できます。トークンはユーザー設定からいつでも取り消せます。",
]


@pytest.fixture(scope="module")
def judge() -> LexicalJudge:
    return LexicalJudge()


def relevancy(judge: LexicalJudge, question: str, answer: str, contexts: list[str]) -> tuple[float, bool]:
    value, detail = METRICS["answer_relevancy"](judge, RecordText(question, contexts, answer), Usage())
    return value, detail["noncommittal"]


def faithfulness(judge: LexicalJudge, answer: str, contexts: list[str]) -> tuple[float, dict]:
    return METRICS["faithfulness"](judge, RecordText("q", contexts, answer), Usage())


def assert_adds_no_statement(judge: LexicalJudge, answer: str, plain: str, contexts: list[str]) -> None:
    """`answer` is `plain` (one claim) with something that is no claim: one statement, the same score."""
    value, detail = faithfulness(judge, answer, contexts)
    assert len(detail["statements"]) == 1
    assert value == pytest.approx(faithfulness(judge, plain, contexts)[0], abs=0.02)


# -- answer relevancy -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "restated", "right", "contexts"),
    [
        ("shallow clone table performance", "Shallow clone table performance.",
         "Queries on a shallow clone run as fast as on the source table.", EN_CONTEXT),
        ("How long are audit logs kept?", "You are asking about how long audit logs are kept.",
         "Audit logs are kept for 90 days.", EN_CONTEXT),
        ("ポイントの有効期限はいつまでですか？", "ポイントの有効期限はいつまでか、というご質問ですね。",
         "最後にポイントを獲得した日から1年間です。", JA_CONTEXT),
        ("代表者は誰ですか？", "代表者は誰か知りたいということですね。", "山田花子です。", JA_CONTEXT),
        # Near restatements: what a kind-asking question asks for is missing, a filler word added.
        ("How long does it take to create a shallow clone of a big table?",
         "Creating a shallow clone of a big table takes time.", "About 10 seconds for a 2 TB table.", EN_CONTEXT),
        ("Who designed the Harbour Lighthouse?", "The Harbour Lighthouse has a well-known design.",
         "Margaret Collins designed it.", EN_CONTEXT),
        ("ポイントの有効期限はどのくらいですか？", "ポイントの有効期限はそれなりにあります。", "1年間です。",
         JA_CONTEXT),
        ("本店の建物は誰が設計しましたか？", "本店の建物は有名な人が設計しました。", "田中一郎です。", JA_CONTEXT),
        ("Can I revoke a token?", "You are asking whether you can revoke a token.",
         "Yes, from User Settings at any time.", SUPPORT_CONTEXT),
        ("監査ログの設定方法", "監査ログの設定方法についてですね。",
         "ワークスペース設定のセキュリティから設定します。", SUPPORT_CONTEXT_JA),
    ],
    ids=["en-echo", "en-you-ask", "ja-goshitsumon", "ja-shiritai",
         "en-near-how-long", "en-near-who", "ja-near-dono-kurai", "ja-near-dare", "en-asking-whether", "ja-desune"],
)
def test_restating_the_question_commits_to_nothing(
    judge: LexicalJudge, question: str, restated: str, right: str, contexts: list[str]
) -> None:
    value, noncommittal = relevancy(judge, question, restated, contexts)
    assert noncommittal and value == 0.0
    assert relevancy(judge, question, right, contexts)[0] > 0.5


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("Are shallow clones as fast as the source table?", "Yes, shallow clones are as fast."),
        ("シャロークローンは速いですか？", "はい、シャロークローンは速いです。"),
    ],
    ids=["en", "ja"],
)
def test_a_short_answer_to_an_open_question_is_no_restatement(judge: LexicalJudge, question: str, answer: str) -> None:
    value, noncommittal = relevancy(judge, question, answer, EN_CONTEXT)
    assert not noncommittal and value > 0.5


@pytest.mark.parametrize(
    "answer",
    [
        "I cannot answer that from the documents.",
        "The documents do not mention how long logs are kept.",
        "申し訳ありませんが、分かりかねます。",
        "その件についてはお答えできません。",
        "恐れ入りますが、お答えいたしかねます。",
        "有効期限については文書に記載がありません。",
        "保存期間については、お答えできかねます。",
        "その点については存じ上げません。",
    ],
)
def test_refusals_are_noncommittal(judge: LexicalJudge, answer: str) -> None:
    value, noncommittal = relevancy(judge, "How long are audit logs kept?", answer, EN_CONTEXT)
    assert noncommittal and value == 0.0


@pytest.mark.parametrize(
    ("question", "meta", "contexts"),
    [
        ("How long are audit logs kept?",
         "The context explains how to configure audit logging. It provides information on the settings.", EN_CONTEXT),
        ("How long are audit logs kept?", "The document provides information on audit logs.", EN_CONTEXT),
        ("ポイントの有効期限はいつまでですか？",
         "この文書ではポイントの有効期限について説明されています。", JA_CONTEXT),
        ("ポイントの有効期限はいつまでですか？",
         "資料にはポイントに関する情報が含まれています。詳しくは資料をご覧ください。", JA_CONTEXT),
        ("how do I rotate an API key", "The API tokens documentation describes how to rotate your keys.",
         SUPPORT_CONTEXT),
        ("how often are backups taken", "Our documentation has a page about backups.", SUPPORT_CONTEXT),
        ("APIキーのローテーション方法", "APIトークンのドキュメントでは、キーのローテーション方法が説明されています。",
         SUPPORT_CONTEXT_JA),
    ],
    ids=["en-context-explains", "en-document-provides", "ja-setsumei", "ja-fukumare", "en-compound-source",
         "en-has-a-page", "ja-compound-source"],
)
def test_answers_that_describe_the_documents_commit_to_nothing(
    judge: LexicalJudge, question: str, meta: str, contexts: list[str]
) -> None:
    value, noncommittal = relevancy(judge, question, meta, contexts)
    assert noncommittal and value == 0.0


@pytest.mark.parametrize(
    ("question", "long_miss", "short_right", "contexts"),
    [
        ("How long are audit logs kept?",
         "Audit logs record who did what in the workspace. Audit logging is configured in the workspace settings "
         "under Security. Audit logs help administrators review activity and keep the workspace secure.",
         "They are kept for 90 days.", EN_CONTEXT),
        ("ポイントの有効期限はいつまでですか？",
         "ポイントは買い物をするたびに貯まり、1ポイント1円として使えます。ポイントの有効期限はとても大切です。"
         "ポイントは会員アプリで確認できます。",
         "獲得した日から1年間です。", JA_CONTEXT),
    ],
    ids=["en", "ja"],
)
def test_long_on_topic_answer_that_misses_the_ask_ranks_below_short_right_one(
    judge: LexicalJudge, question: str, long_miss: str, short_right: str, contexts: list[str]
) -> None:
    assert relevancy(judge, question, short_right, contexts)[0] > relevancy(judge, question, long_miss, contexts)[0]


@pytest.mark.parametrize(
    ("question", "right", "elsewhere"),
    [
        # The subject is implied: the answer says again the sentence that names it.
        ("Can I revoke a token?", "Yes, from User Settings at any time.",
         "Personal access tokens expire after 90 days by default."),
        ("configure audit logging",
         "Open Security in the workspace settings and turn on delivery to a storage bucket. "
         "You need to be a workspace admin.",
         "Audit logs are delivered to a storage bucket. Personal access tokens expire after 90 days by default. "
         "Admins can set a maximum lifetime for new tokens."),
        ("トークンは取り消せますか？", "はい、ユーザー設定からいつでもできます。",
         "個人アクセストークンの有効期限は既定で90日です。"),
        ("監査ログの設定方法",
         "ワークスペース設定のセキュリティから、監査ログの配信を有効にします。管理者のみ設定できます。",
         "個人アクセストークンの有効期限は既定で90日です。トークンはユーザー設定からいつでも取り消せます。"),
        # A fragment too short to say what it is about goes with the part before it.
        ("configure audit logging", "Workspace settings > Security; admins only.",
         "Personal access tokens expire after 90 days by default."),
        ("監査ログの設定方法", "ワークスペース設定のセキュリティから。管理者のみ。",
         "個人アクセストークンの有効期限は既定で90日です。"),
    ],
    ids=["en-yes-no", "en-keywords", "ja-yes-no", "ja-keywords", "en-fragment", "ja-fragment"],
)
def test_an_answer_that_leaves_the_subject_to_its_source_still_answers(
    judge: LexicalJudge, question: str, right: str, elsewhere: str
) -> None:
    contexts = SUPPORT_CONTEXT if question.isascii() else SUPPORT_CONTEXT_JA
    value = relevancy(judge, question, right, contexts)[0]
    assert value > 0.8
    assert value > relevancy(judge, question, elsewhere, contexts)[0] + 0.2


@pytest.mark.parametrize(
    ("question", "kinds"),
    [
        ("When does the shop open?", {"date"}),
        ("Do you know when the shop opened?", {"date"}),
        # After another question word, "when" is a condition, not a question for a date.
        ("What should I do first when an earthquake starts?", set()),
        ("How long does it take when the table is big?", {"length"}),
        # A limit the question ends on is an amount; raising one or asking whether there is one is not.
        ("export csv limit", {"number"}),
        ("What is the upload limit?", {"number"}),
        ("Is there a limit on exports?", set()),
        ("how do I raise my quota", set()),
        ("エクスポート 上限", {"number"}),
        ("アップロードの上限は？", {"number"}),
        ("上限を上げるには？", set()),
        # 「誰でも」「いつでも」 are "anyone", "any time".
        ("誰でも使えますか？", set()),
        ("トークンはいつでも取り消せますか？", set()),
    ],
)
def test_what_a_question_asks_for(question: str, kinds: set[str]) -> None:
    assert asked(question) == kinds


@pytest.mark.parametrize(
    ("question", "parts"),
    [
        ("When are backups taken and can I restore them myself?",
         ["When are backups taken", "can I restore them myself?"]),
        ("バックアップはいつ取られていて、自分で復元できますか？",
         ["バックアップはいつ取られていて", "自分で復元できますか?"]),
    ],
    ids=["en", "ja"],
)
def test_a_yes_no_question_after_a_question_words_clause_is_a_part_of_its_own(question: str, parts: list[str]) -> None:
    assert question_parts(question) == parts


@pytest.mark.parametrize(
    ("question", "duration", "other_number"),
    [
        ("how long do you keep data after I delete my workspace", "30 days, then it is erased for good.",
         "Cancelling switches the workspace to the Free plan, and you keep using it."),
        ("How long are audit logs kept?", "For 90 days.", "Audit logs are kept by 2 services."),
        ("退会後、データはどのくらいの期間保存されますか？", "30日間保存され、その後削除されます。",
         "無料プランに切り替わり、引き続き使えます。"),
    ],
    ids=["free-plan", "count", "ja-free-plan"],
)
def test_how_long_is_answered_by_a_time_or_a_length_not_by_any_number(
    judge: LexicalJudge, question: str, duration: str, other_number: str
) -> None:
    assert relevancy(judge, question, duration, SUPPORT_CONTEXT)[0] > relevancy(
        judge, question, other_number, SUPPORT_CONTEXT)[0]


@pytest.mark.parametrize(
    ("question", "contexts", "answer"),
    [
        # The question's words are in the first source sentence, most of the answer in the second.
        ("What should I do first when an earthquake starts?",
         ["When an earthquake starts, get under a table. Once the shaking stops, shut off the gas, open a door "
          "and keep the exit clear."],
         "Get under a table, then after the shaking stops shut off the gas, open a door and keep the exit clear."),
        ("停電したらまず何をすればよいですか？",
         ["停電したら、まず懐中電灯をつけてください。ブレーカーを落とし、冷蔵庫の扉は開けずに電気が戻るのを待ちます。"],
         "懐中電灯をつけてからブレーカーを落とし、冷蔵庫の扉は開けずに電気が戻るのを待ちます。"),
    ],
    ids=["en", "ja"],
)
def test_an_answer_sentence_that_joins_two_source_sentences_answers_what_the_first_is_about(
    judge: LexicalJudge, question: str, contexts: list[str], answer: str
) -> None:
    assert relevancy(judge, question, answer, contexts)[0] > 0.6


@pytest.mark.parametrize(
    ("question", "good", "subject_only", "contexts"),
    [
        # A sentence that only names the question's subject restates no source sentence about it.
        ("When do personal access tokens expire?", "Personal access tokens expire after 90 days by default.",
         "Personal access tokens expire after some time. Personal access tokens are a popular and convenient "
         "way to sign in from scripts and tools.", SUPPORT_CONTEXT),
        ("個人アクセストークンの有効期限はいつですか？", "個人アクセストークンの有効期限は既定で90日です。",
         "個人アクセストークンの有効期限はいつか決まっています。個人アクセストークンはスクリプトやツールから"
         "便利に使える人気の方法です。", SUPPORT_CONTEXT_JA),
    ],
    ids=["en", "ja"],
)
def test_a_sentence_that_only_names_the_subject_is_not_linked_to_the_source(
    judge: LexicalJudge, question: str, good: str, subject_only: str, contexts: list[str]
) -> None:
    assert relevancy(judge, question, good, contexts)[0] > relevancy(judge, question, subject_only, contexts)[0] + 0.2


@pytest.mark.parametrize(
    ("question", "complete", "incomplete", "contexts"),
    [
        ("Where is the head office and who leads it?", "The head office is in Leeds and is led by Anna Berg.",
         "The head office is in Leeds.", EN_CONTEXT),
        ("本社はどこにあり、代表者は誰ですか？",
         "本社は名古屋市にあり、代表者は山田花子です。", "本社は名古屋市にあります。", JA_CONTEXT),
        ("本店の建物はいつ、誰が設計しましたか？", "1965年に田中一郎が設計しました。", "本店の建物は設計されました。",
         JA_CONTEXT),
    ],
    ids=["en", "ja-where-who", "ja-when-who"],
)
def test_incomplete_answer_ranks_below_complete_one(
    judge: LexicalJudge, question: str, complete: str, incomplete: str, contexts: list[str]
) -> None:
    assert relevancy(judge, question, complete, contexts)[0] > relevancy(judge, question, incomplete, contexts)[0]


@pytest.mark.parametrize(
    ("question", "right_type", "wrong_type", "contexts"),
    [
        ("Who designed the Harbour Lighthouse?", "Margaret Collins designed it.",
         "The Harbour Lighthouse was designed with great care.", EN_CONTEXT),
        ("How many seconds does creating a shallow clone take?", "About 10 seconds.",
         "Creating a shallow clone takes little time because it copies only metadata.", EN_CONTEXT),
        ("本店の建物は誰が設計しましたか？",
         "田中一郎が設計しました。", "本店の建物は丁寧に設計されました。", JA_CONTEXT),
        ("ポイントは1ポイント何円として使えますか？", "1ポイント1円です。", "ポイントはお得に使えます。", JA_CONTEXT),
        # 「から」 after a place is no time.
        ("トークンの有効期限はいつまでですか？", "既定で90日です。", "ユーザー設定から確認できます。",
         SUPPORT_CONTEXT_JA),

    ],
    ids=["en-who", "en-how-many", "ja-dare", "ja-nanen", "ja-itsu-kara"],
)
def test_answer_of_the_asked_type_ranks_above_one_that_is_not(
    judge: LexicalJudge, question: str, right_type: str, wrong_type: str, contexts: list[str]
) -> None:
    assert relevancy(judge, question, right_type, contexts)[0] > relevancy(judge, question, wrong_type, contexts)[0]


# -- faithfulness ------------------------------------------------------------------------------------


def test_supported_paraphrase_keeps_most_of_its_support(judge: LexicalJudge) -> None:
    paraphrase, _ = faithfulness(judge, "The shop sells bikes.", EN_CONTEXT)
    unsupported, _ = faithfulness(judge, "The shop sells cars.", EN_CONTEXT)
    assert paraphrase > unsupported
    assert paraphrase >= 0.5  # was 0.37 before synonym credit: words alone found "bikes" nowhere


@pytest.mark.parametrize(
    ("stated", "recombined", "contexts"),
    [
        ("Margaret Collins designed the Harbour Lighthouse.", "Thomas Reid designed the Harbour Lighthouse.",
         EN_CONTEXT),
        ("本店の建物は田中一郎が設計しました。", "本店の建物は山田花子が設計しました。", JA_CONTEXT),
    ],
    ids=["en", "ja"],
)
def test_detail_recombined_from_elsewhere_in_the_contexts_supports_less(
    judge: LexicalJudge, stated: str, recombined: str, contexts: list[str]
) -> None:
    assert faithfulness(judge, stated, contexts)[0] > faithfulness(judge, recombined, contexts)[0]


@pytest.mark.parametrize(
    ("answer", "evidence", "contexts"),
    [
        ("Audit logs are kept for 30 days.", "Audit logs are kept for 90 days.", EN_CONTEXT),
        ("ポイントの有効期限は獲得した日から3年間です。",
         "会員ポイントの有効期限は、最後にポイントを獲得した日から1年間です。", JA_CONTEXT),
    ],
    ids=["en", "ja"],
)
def test_each_verdict_names_the_sentence_it_was_matched_to(
    judge: LexicalJudge, answer: str, evidence: str, contexts: list[str]
) -> None:
    value, detail = faithfulness(judge, answer, contexts)
    (statement,) = detail["statements"]
    assert value < 0.5  # the number is wrong
    assert statement["evidence"] == evidence
    assert statement["evidence"] in context_sentences(contexts)
    (verdict,) = judge.verify(RecordText("q", contexts, answer), [answer], Usage())
    assert isinstance(verdict, Verdict) and verdict.evidence == evidence


@pytest.mark.parametrize(
    ("heading", "sentence", "answer"),
    [
        ("Oily Skin Causes.", "Hormones and humid weather make the glands produce more sebum.",
         "Oily skin causes include hormones and humid weather."),
        ("脂性肌の原因", "ホルモンや高い湿度によって皮脂の分泌が増えます。", "脂性肌の原因はホルモンや高い湿度です。"),
    ],
    ids=["en", "ja"],
)
def test_a_heading_closest_to_the_statement_gives_way_to_the_sentence_that_says_it(
    judge: LexicalJudge, heading: str, sentence: str, answer: str
) -> None:
    rec = RecordText("q", [f"{heading}\n{sentence}"], answer)
    (alignment,) = judge.alignments(rec, [answer], Usage())
    assert alignment.context.sentences[alignment.best] == heading  # what the embedding picks
    (verdict,) = judge.verify(rec, [answer], Usage())
    assert isinstance(verdict, Verdict) and verdict.evidence == sentence


@pytest.mark.parametrize(
    ("question", "answer", "contexts"),
    [
        ("How long are audit logs kept?",
         "Audit logs are kept for 90 days. The documents do not mention who can read them.", EN_CONTEXT),
        ("ポイントの有効期限はいつまでですか？",
         "獲得した日から1年間です。失効後の扱いについては文書に記載がありません。", JA_CONTEXT),
    ],
    ids=["en", "ja"],
)
def test_an_answer_with_a_caveat_is_no_refusal(
    judge: LexicalJudge, question: str, answer: str, contexts: list[str]
) -> None:
    value, noncommittal = relevancy(judge, question, answer, contexts)
    assert not noncommittal and value > 0.5


@pytest.mark.parametrize(
    ("question", "answer", "contexts"),
    [
        ("How long are audit logs kept?", "The document mentions that audit logs are kept for 90 days.", EN_CONTEXT),
        ("ポイントの有効期限はいつまでですか？", "資料に記載されている通り、獲得した日から1年間です。", JA_CONTEXT),
    ],
    ids=["en-mentions-that", "ja-kisai-no-toori"],
)
def test_an_answer_that_names_its_source_still_answers(
    judge: LexicalJudge, question: str, answer: str, contexts: list[str]
) -> None:
    value, noncommittal = relevancy(judge, question, answer, contexts)
    assert not noncommittal and value > 0.5


@pytest.mark.parametrize(
    ("plain", "cited", "contexts"),
    [
        ("Audit logs are kept for 90 days.", "Audit logs are kept for 90 days [2].", EN_CONTEXT),
        ("Audit logs are kept for 90 days.", "Audit logs are kept for 90 days (Passage 2).", EN_CONTEXT),
        ("Audit logs are kept for 90 days.", "According to Source 2, audit logs are kept for 90 days.", EN_CONTEXT),
        ("Audit logs are kept for 90 days. Thomas Reid built the railway station in 1901.",
         "Audit logs are kept for 90 days.[1] Thomas Reid built the railway station in 1901.[1][3]", EN_CONTEXT),
        ("Audit logs are kept for 90 days.", "Based on the provided passages, audit logs are kept for 90 days.",
         EN_CONTEXT),
        ("本社は名古屋市にあります。", "本社は名古屋市にあります【2】。", JA_CONTEXT),
        ("本社は名古屋市にあります。", "本社は名古屋市にあります（文書2）。", JA_CONTEXT),
        ("本社は名古屋市にあります。", "資料2によると、本社は名古屋市にあります。", JA_CONTEXT),
        ("本社は名古屋市にあります。", "提供された文書によると、本社は名古屋市にあります。", JA_CONTEXT),
        ("Audit logs are kept for 90 days.", "Audit logs are kept for 90 days (Passage 1, Passage 3).", EN_CONTEXT),
        ("本社は名古屋市にあります。", "本社は名古屋市にあります（文書1、文書3）。", JA_CONTEXT),
    ],
    ids=["en-bracket", "en-passage", "en-according-to", "en-glued", "en-based-on", "ja-lenticular", "ja-bunsho",
         "ja-niyoruto", "ja-teikyou", "en-several-passages", "ja-several-bunsho"],
)
def test_citation_markers_are_no_part_of_a_claim(
    judge: LexicalJudge, plain: str, cited: str, contexts: list[str]
) -> None:
    """An answer that cites its sources is as faithful as the same answer without the citations: the
    markers' numbers are not claims (they made every cited statement unsupported)."""
    plain_value, plain_detail = faithfulness(judge, plain, contexts)
    cited_value, cited_detail = faithfulness(judge, cited, contexts)
    assert plain_value > 0.8
    assert cited_value == pytest.approx(plain_value, abs=0.02)  # "audit" for "Audit": another embedding
    assert len(cited_detail["statements"]) == len(plain_detail["statements"])


@pytest.mark.parametrize(
    ("answer", "contexts"),
    [
        ("The facts:\n1. Audit logs are kept for 90 days.\n2. Thomas Reid built the railway station in 1901.",
         EN_CONTEXT),
        ("- Audit logs are kept for 90 days.\n- Thomas Reid built the railway station in 1901.", EN_CONTEXT),
        ("Audit logs are kept for 90 days. 2. Thomas Reid built the railway station in 1901.", EN_CONTEXT),
        ("1. 本社は名古屋市にあります。\n2. 代表者は山田花子です。", JA_CONTEXT),
        ("・本社は名古屋市にあります。\n・代表者は山田花子です。", JA_CONTEXT),
    ],
    ids=["en-numbered", "en-bullets", "en-inline", "ja-numbered", "ja-nakaguro"],
)
def test_list_markers_are_no_statements(judge: LexicalJudge, answer: str, contexts: list[str]) -> None:
    _, detail = faithfulness(judge, answer, contexts)
    statements = [s["statement"] for s in detail["statements"]]
    assert not any(s.rstrip(".)）").isdigit() for s in statements), statements
    facts = [s for s in detail["statements"] if "The facts" not in s["statement"]]
    assert len(facts) == 2 and all(s["verdict"] > 0.8 for s in facts), detail["statements"]


@pytest.mark.parametrize(
    ("question", "answer", "contexts"),
    [
        ("How many days are audit logs kept?", "Audit logs are kept for a while [3].", EN_CONTEXT),
        ("監査ログは何日間保存されますか？", "しばらく保存されます【3】。", JA_CONTEXT),
    ],
    ids=["en", "ja"],
)
def test_a_citation_number_does_not_answer_how_many(
    judge: LexicalJudge, question: str, answer: str, contexts: list[str]
) -> None:
    cited, _ = relevancy(judge, question, answer, contexts)
    plain, _ = relevancy(judge, question, answer.replace(" [3]", "").replace("【3】", ""), contexts)
    assert cited == pytest.approx(plain)


@pytest.mark.parametrize(
    ("plain", "framed", "contexts"),
    [
        ("Audit logs are kept for 90 days.",
         "Sure! Here is a summary of the documents in 12 words:\n\nAudit logs are kept for 90 days.", EN_CONTEXT),
        ("Audit logs are kept for 90 days.", "Certainly! Audit logs are kept for 90 days.", EN_CONTEXT),
        ("本社は名古屋市にあります。", "はい、以下は要約です：\n本社は名古屋市にあります。", JA_CONTEXT),
        ("本社は名古屋市にあります。", "かしこまりました。本社は名古屋市にあります。", JA_CONTEXT),
        ("Audit logs are kept for 90 days.", "Sure, I can help you with that! Audit logs are kept for 90 days.",
         EN_CONTEXT),
        ("本社は名古屋市にあります。", "はい、お答えします。本社は名古屋市にあります。", JA_CONTEXT),
        ("Audit logs are kept for 90 days.",
         "Based on the provided passages, the retention rules for audit logs are:\n- Audit logs are kept for 90 days.",
         EN_CONTEXT),
        ("本社は名古屋市にあります。", "会社の概要は次のとおりです：\n・本社は名古屋市にあります。", JA_CONTEXT),
        ("Audit logs are kept for 90 days.",
         "Audit logs are kept for 90 days. I hope this helps! Let me know if you have any other questions.",
         EN_CONTEXT),
        ("本社は名古屋市にあります。",
         "本社は名古屋市にあります。お役に立てれば幸いです。他にご質問があればお気軽にどうぞ。", JA_CONTEXT),
        ("Audit logs are kept for 90 days.", "Retention:\nAudit logs are kept for 90 days.", EN_CONTEXT),
        ("本社は名古屋市にあります。", "所在地：\n本社は名古屋市にあります。", JA_CONTEXT),
        # A bare reply before the sentence that says it.
        ("Audit logs are kept for 90 days.", "Partly. Audit logs are kept for 90 days.", EN_CONTEXT),
        ("本社は名古屋市にあります。", "一部のみです。本社は名古屋市にあります。", JA_CONTEXT),
    ],
    ids=["en-here-is", "en-certainly", "ja-ika", "ja-kashikomari", "en-i-can-help", "ja-okotae-shimasu",
         "en-list-header", "ja-list-header", "en-closing", "ja-closing", "en-heading", "ja-heading",
         "en-bare-reply", "ja-bare-reply"],
)
def test_sentences_that_only_frame_the_answer_are_no_statements(
    judge: LexicalJudge, plain: str, framed: str, contexts: list[str]
) -> None:
    """"Here is a summary in 12 words:" claims nothing about the world; as a statement it was
    unsupported (the word count is not in the contexts) and pulled a faithful answer down."""
    assert_adds_no_statement(judge, framed, plain, contexts)


def test_a_sentence_with_a_colon_that_says_something_is_still_a_statement(judge: LexicalJudge) -> None:
    _, detail = faithfulness(judge, "Here are the retention rules: audit logs are kept for 90 days.", EN_CONTEXT)
    assert len(detail["statements"]) == 1


@pytest.mark.parametrize(
    "answer",
    ["Enjoy free shipping on every order over 50 dollars.", "Let me explain: the points expire after a year.",
     "Good luck charms are sold at the shrine for 500 yen.", "ご質問の多い送料は全国一律500円です。"],
    ids=["en-enjoy-with-a-claim", "en-let-me-explain", "en-good-luck-charms", "ja-gositsumon-with-a-claim"],
)
def test_a_claim_that_opens_like_a_closing_is_still_a_statement(judge: LexicalJudge, answer: str) -> None:
    _, detail = faithfulness(judge, answer, EN_CONTEXT)
    assert len(detail["statements"]) == 1


@pytest.mark.parametrize(
    ("abbreviated", "written_out", "contexts"),
    [
        ("The forecast for Tue, Aug 23 is 82 degrees and sunny.",
         "The forecast for Tuesday, August 23rd is 82 degrees and sunny.",
         ["The forecast for Tuesday, August 23 is 82 degrees and sunny. Wednesday brings rain."]),
        ("8月23日(火)は晴れで、最高気温は28度です。", "8月23日火曜日は晴れで、最高気温は28度です。",
         ["8月23日火曜日は晴れで、最高気温は28度の予報です。水曜日は雨です。"]),
    ],
    ids=["en", "ja"],
)
def test_an_abbreviated_month_or_weekday_is_its_name(
    judge: LexicalJudge, abbreviated: str, written_out: str, contexts: list[str]
) -> None:
    """"Aug 23" in the answer and "August 23" in the contexts (or the other way round) are one date;
    the abbreviation was a missing word and a name not found."""
    assert faithfulness(judge, abbreviated, contexts)[0] == pytest.approx(
        faithfulness(judge, written_out, contexts)[0], abs=0.05)


STRUCTURED = [
    "{'name': 'Harbour Cafe', 'city': 'Leeds', 'hours': {'Monday': '8:0-20:0', 'Sunday': '10:0-16:30'}, "
    "'attributes': {'OutdoorSeating': True, 'RestaurantsTakeOut': True}, 'stars': 4.0}",
]
STRUCTURED_JA = [
    "{'店名': 'ハーバーカフェ', '営業時間': {'月曜日': '8:00-20:00', '日曜日': '10:00-16:30'}, '評価': 4.0}",
]


@pytest.mark.parametrize(
    ("answer", "wrong"),
    [
        ("Harbour Cafe is open from 8 AM to 8 PM on Mondays.", "Harbour Cafe is open from 9 AM to 8 PM on Mondays."),
        ("On Sundays it closes at 4:30 p.m.", "On Sundays it closes at 5:30 p.m."),
        ("Harbour Cafe has a rating of 4 stars.", "Harbour Cafe has a rating of 3 stars."),
        ("Harbour Cafe offers outdoor seating.", "Harbour Cafe offers valet parking."),
        ("ハーバーカフェの月曜日の営業時間は午後8時までです。", "ハーバーカフェの月曜日の営業時間は午後9時までです。"),
        ("日曜日の営業時間は16時30分までです。", "日曜日の営業時間は17時30分までです。"),
    ],
    ids=["en-pm", "en-p.m.", "en-decimal", "en-camel-case-key", "ja-gogo", "ja-ji-fun"],
)
def test_structured_data_written_as_prose_is_supported(judge: LexicalJudge, answer: str, wrong: str) -> None:
    """Structured contexts spell values their own way ('20:0', 4.0, OutdoorSeating); an answer that
    says them in prose ("8 PM", "4 stars", "outdoor seating", 「午後8時」) is supported, a wrong value is
    not. (Support stays partial: a record of data is no close sentence for any statement.)"""
    contexts = STRUCTURED_JA if answer.isascii() is False else STRUCTURED
    right_value, _ = faithfulness(judge, answer, contexts)
    wrong_value, _ = faithfulness(judge, wrong, contexts)
    assert right_value > 0.25 and wrong_value < right_value / 2


@pytest.mark.parametrize(
    ("answer", "wrong", "contexts"),
    [
        ("Harbour Cafe is located at 2026 Vine Street in Leeds.",
         "Harbour Cafe is located at 2062 Vine Street in Leeds.",
         ["{'name': 'Harbour Cafe', 'address': '2026 Vine Street', 'city': 'Leeds', 'categories': 'Coffee, Tea, "
          "Bakeries, Breakfast, Brunch', 'hours': {'Monday': '8:0-20:0', 'Tuesday': '8:0-20:0', 'Sunday': "
          "'10:0-16:0'}, 'attributes': {'OutdoorSeating': True, 'WiFi': 'free', 'RestaurantsTakeOut': True}}",
          "We loved the cakes. Staff were friendly. The coffee was hot. "
          "Harbour Cafe is located on a street in Leeds by the harbour."]),
        ("ハーバーカフェの住所は葵町2026番地です。", "ハーバーカフェの住所は葵町2062番地です。",
         ["{'店名': 'ハーバーカフェ', '住所': '葵町2026番地', '市': '名古屋市', '分類': 'コーヒー、紅茶、パン、朝食', "
          "'営業時間': {'月曜日': '8:00-20:00', '火曜日': '8:00-20:00', '日曜日': '10:00-16:00'}, "
          "'設備': {'屋外席': True, 'Wi-Fi': '無料', '持ち帰り': True}}",
          "ケーキが美味しかったです。店員は親切でした。コーヒーは熱かったです。"
          "ハーバーカフェの住所は葵町で、港の近くです。"]),
    ],
    ids=["en", "ja"],
)
def test_the_evidence_holds_the_statements_numbers_when_a_closer_sentence_does_not(
    judge: LexicalJudge, answer: str, wrong: str, contexts: list[str]
) -> None:
    """A record of data is rarely the sentence closest to a statement by embedding (reviews of the
    place are); the sentence that holds its numbers and names is the evidence then."""
    right_value, detail = faithfulness(judge, answer, contexts)
    wrong_value, _ = faithfulness(judge, wrong, contexts)
    assert detail["statements"][0]["evidence"] == contexts[0]
    assert right_value > 0.4 and wrong_value < right_value / 2


@pytest.mark.parametrize("answer", ["The cafe uses local milk.", "The cakes were baked by hand."])
def test_an_inflected_word_is_the_same_word(judge: LexicalJudge, answer: str) -> None:
    """"uses"/"used", "cakes"/"cake": truncating words to five letters left short words' inflections
    apart, and a faithful paraphrase lost a share of its support for each (0.88 and 0.86 before)."""
    value, _ = faithfulness(judge, answer, ["The cafe used local milk. Each cake was baked by hand."])
    assert value > 0.95


@pytest.mark.parametrize(
    ("plain", "reported", "contexts"),
    [
        ("The staff were rude and the wait was long.",
         "One reviewer mentioned that the staff were rude and the wait was long.",
         ["Terrible visit. The staff were rude and the wait was long. Never again."]),
        ("The staff were rude and the wait was long.",
         "According to the reviews, the staff were rude and the wait was long.",
         ["Terrible visit. The staff were rude and the wait was long. Never again."]),
        ("店員は無愛想で、待ち時間が長かったです。", "口コミによると、店員は無愛想で、待ち時間が長かったです。",
         ["最悪でした。店員は無愛想で、待ち時間が長かったです。もう行きません。"]),
        ("店員は無愛想で、待ち時間が長かった。", "店員は無愛想で、待ち時間が長かったという口コミがあります。",
         ["最悪でした。店員は無愛想で、待ち時間が長かったです。もう行きません。"]),
    ],
    ids=["en-one-reviewer", "en-according-to-reviews", "ja-kuchikomi", "ja-to-iu-kuchikomi"],
)
def test_what_reviewers_said_is_the_claim(judge: LexicalJudge, plain: str, reported: str, contexts: list[str]) -> None:
    """Over reviews, an answer reports what people said ("One reviewer mentioned that ..."); the
    words "reviewer" and "mentioned" are in no review, and they made a faithful report unsupported."""
    plain_value = faithfulness(judge, plain, contexts)[0]
    assert faithfulness(judge, reported, contexts)[0] == pytest.approx(plain_value, abs=0.02)


@pytest.mark.parametrize(
    ("plain", "framed", "contexts"),
    [
        ("Audit logs are kept for 90 days.", "The passages suggest that audit logs are kept for 90 days.", EN_CONTEXT),
        ("Audit logs are kept for 90 days.", "Passage 2 explains that audit logs are kept for 90 days.", EN_CONTEXT),
        ("Audit logging is configured in the workspace settings under Security.",
         "Passage 2 provides information on how audit logging is configured in the workspace settings under Security.",
         EN_CONTEXT),
        ("本社は名古屋市にあります。", "文書2では、本社は名古屋市にあります。", JA_CONTEXT),
        ("本社は名古屋市にある。", "本社は名古屋市にあると述べています。", JA_CONTEXT),
        ("Audit logs are kept for 90 days.", "The author also recounts that audit logs are kept for 90 days.",
         EN_CONTEXT),
        ("本社は名古屋市にあります。", "筆者によると、本社は名古屋市にあります。", JA_CONTEXT),
        ("Audit logs are kept for 90 days.", "Audit logs are kept for 90 days, as mentioned in passage 2.", EN_CONTEXT),
        ("本社は名古屋市にあります。", "本社は名古屋市にあります（文書2より）。", JA_CONTEXT),
    ],
    ids=["en-suggest-that", "en-explains-that", "en-provides-information-on", "ja-dewa", "ja-to-nobete",
         "en-the-author-recounts", "ja-hissha-ni-yoruto", "en-as-mentioned-in-at-the-end", "ja-yori-in-brackets"],
)
def test_a_source_as_the_subject_is_no_part_of_the_claim(
    judge: LexicalJudge, plain: str, framed: str, contexts: list[str]
) -> None:
    """"The passages suggest that X" claims X: "passages" and "suggest" are no words of the contexts,
    and a faithful answer written that way lost support."""
    plain_value = faithfulness(judge, plain, contexts)[0]
    assert faithfulness(judge, framed, contexts)[0] == pytest.approx(plain_value, abs=0.05)


def test_an_answer_that_only_describes_the_documents_still_answers_nothing(judge: LexicalJudge) -> None:
    """The teller is dropped for checking faithfulness only: for answer relevancy the sentence is
    still about the documents."""
    _, noncommittal = relevancy(judge, "How long are audit logs kept?",
                                "The passages discuss how long audit logs are kept.", EN_CONTEXT)
    assert noncommittal


@pytest.mark.parametrize(
    ("answer", "contexts"),
    [
        ("Audit logs are kept for 90 days. The documents do not mention who can read them.", EN_CONTEXT),
        ("最後にポイントを獲得した日から1年間です。失効後の扱いについては文書に記載がありません。", JA_CONTEXT),
    ],
    ids=["en", "ja"],
)
def test_the_documents_silence_is_no_statement_to_check(judge: LexicalJudge, answer: str, contexts: list[str]) -> None:
    """"The documents do not mention X" is true of the documents and says nothing about the world;
    checked word by word against the contexts it was unsupported, and a careful answer scored low."""
    value, detail = faithfulness(judge, answer, contexts)
    assert len(detail["statements"]) == 1 and value > 0.8


def test_an_ordinal_is_its_number(judge: LexicalJudge) -> None:
    """"August 23rd" for "August 23": the suffix was a word of its own that no context holds."""
    value, _ = faithfulness(judge, "The audit is held on August 23rd.", ["The audit is held on August 23 each year."])
    wrong, _ = faithfulness(judge, "The audit is held on August 24th.", ["The audit is held on August 23 each year."])
    assert value > 0.9 and wrong < 0.5


@pytest.mark.parametrize(
    ("fused", "wrong", "contexts"),
    [
        ("Anna Berg, a passenger on Flight 5622, said the cabin filled with smoke.",
         "Anna Berg, a passenger on Flight 5623, said the cabin filled with smoke.",
         ["Flight 5622 made an emergency landing in Leeds on Sunday. The airline apologised for the delay. "
          "Engineers inspected the plane overnight. Passenger Anna Berg said the cabin filled with smoke."]),
        ("5622便の乗客の山田花子さんは、機内に煙が充満したと話した。",
         "5623便の乗客の山田花子さんは、機内に煙が充満したと話した。",
         ["5622便は日曜日に名古屋に緊急着陸した。航空会社は遅延を謝罪した。整備士が夜通し機体を点検した。"
          "乗客の山田花子さんは機内に煙が充満したと話した。"]),
    ],
    ids=["en", "ja"],
)
def test_a_summary_sentence_may_join_facts_from_two_sentences(
    judge: LexicalJudge, fused: str, wrong: str, contexts: list[str]
) -> None:
    """A number the contexts hold in another sentence than the evidence counts half near it (it
    scored 0: the window around the evidence lacked it); a number the contexts lack still decides."""
    fused_value, _ = faithfulness(judge, fused, contexts)
    wrong_value, _ = faithfulness(judge, wrong, contexts)
    assert fused_value > 0.3 and wrong_value < fused_value / 3


def test_a_key_of_two_words_is_also_one_word(judge: LexicalJudge) -> None:
    """'RestaurantsTakeOut' holds "takeout" as well as "take" and "out"."""
    right, _ = faithfulness(judge, "Harbour Cafe offers takeout.", STRUCTURED)
    wrong, _ = faithfulness(judge, "Harbour Cafe offers delivery.", STRUCTURED)
    assert right > wrong + 0.1


EN_RECORD = ["{'name': 'Harbour Cafe', 'city': 'Leeds', 'attributes': {'RestaurantsReservations': True, "
             "'WiFi': \"u'no'\", 'OutdoorSeating': None, 'BusinessParking': {'street': True, 'valet': False}}, "
             "'review_text': 'Lovely coffee and quick service.'}"]
JA_RECORD = ['{"店名": "港カフェ", "所在地": "名古屋市", "予約": "可", "駐車場": "なし", "テラス席": null}']


@pytest.mark.parametrize(
    ("right", "wrong", "contexts"),
    [
        ("Harbour Cafe takes reservations but has no WiFi.",
         "Harbour Cafe does not take reservations but has free WiFi.", EN_RECORD),
        ("There is street parking.", "Valet parking is available.", EN_RECORD),
        ("港カフェは予約ができますが、駐車場はありません。", "港カフェは予約ができず、駐車場があります。", JA_RECORD),
    ],
    ids=["en", "en-grouped", "ja"],
)
def test_a_yes_no_fact_of_a_record_stated_the_wrong_way_is_unsupported(
    judge: LexicalJudge, right: str, wrong: str, contexts: list[str]
) -> None:
    """Every word of "does not take reservations" is in a record that says 'RestaurantsReservations':
    True; the polarity is what is wrong, the commonest hallucination over records of data."""
    assert faithfulness(judge, wrong, contexts)[0] < 0.5 * faithfulness(judge, right, contexts)[0]


@pytest.mark.parametrize(
    ("unknown", "contexts"),
    [("Harbour Cafe has outdoor seating.", EN_RECORD), ("Harbour Cafe has no outdoor seating.", EN_RECORD),
     ("港カフェにはテラス席があります。", JA_RECORD), ("港カフェにはテラス席がありません。", JA_RECORD)],
    ids=["en-has", "en-has-not", "ja-has", "ja-has-not"],
)
def test_a_fact_the_record_does_not_know_supports_neither_way(
    judge: LexicalJudge, unknown: str, contexts: list[str]
) -> None:
    """'OutdoorSeating': None says the record does not know: "has outdoor seating" is as baseless as
    "has none"."""
    assert faithfulness(judge, unknown, contexts)[0] < 0.3


def test_a_word_of_a_grouped_key_elsewhere_is_no_mention_of_it(judge: LexicalJudge) -> None:
    """'street' in the parking group is a fact about parking, not about an address on a street."""
    plain = faithfulness(judge, "Harbour Cafe is in Leeds.", EN_RECORD)[0]
    assert faithfulness(judge, "Harbour Cafe is not on a street in Leeds.", EN_RECORD)[0] > plain - 0.3


@pytest.mark.parametrize(
    ("plain", "existence", "contexts"),
    [
        ("Harbour Cafe is in Leeds.", "Harbour Cafe is located in Leeds.", EN_RECORD),
        ("There is street parking.", "Street parking is available.", EN_RECORD),
        # Japanese says it with hiragana endings (「にあります」「があります」), which are no tokens.
        ("港カフェは名古屋市。", "港カフェは名古屋市にあります。", JA_RECORD),
    ],
    ids=["en-located", "en-available", "ja-arimasu"],
)
def test_saying_that_something_is_somewhere_or_exists_adds_no_missing_word(
    judge: LexicalJudge, plain: str, existence: str, contexts: list[str]
) -> None:
    """A record of data says 'city': 'Leeds', never "located"; the verb was a missing word. (The
    wording still moves the embedding's closeness a little.)"""
    plain_value = faithfulness(judge, plain, contexts)[0]
    assert faithfulness(judge, existence, contexts)[0] == pytest.approx(plain_value, abs=0.1)


def test_a_name_the_question_gives_is_no_invented_entity(judge: LexicalJudge) -> None:
    """"How much does it cost in Michigan?" answered "In Michigan, it costs ..." names the question's
    scope; as a name the contexts lack it made the statement's support 0. (Japanese has no
    capitalised names: there the name is a missing word like any other.)"""
    question = "How long does Northwind keep audit logs?"
    scoped = METRICS["faithfulness"](
        judge, RecordText(question, EN_CONTEXT, "Audit logs at Northwind are kept for 90 days."), Usage())[0]
    invented = METRICS["faithfulness"](
        judge, RecordText("How long are audit logs kept?", EN_CONTEXT, "Audit logs at Northwind are kept for 90 days."),
        Usage())[0]
    assert invented < 0.1 < scoped


@pytest.mark.parametrize(
    ("plain", "converted", "wrong", "contexts"),
    [
        ("In September the average high is 58 degrees Fahrenheit.",
         "In September the average high is 58 degrees Fahrenheit (15 degrees Celsius).",
         "In September the average high is 58 degrees Fahrenheit (4 degrees Celsius).",
         ["In September the average high is 58 degrees Fahrenheit. January is the wettest month."]),
        ("9月の平均最高気温は華氏58度です。", "9月の平均最高気温は華氏58度（摂氏15度）です。",
         "9月の平均最高気温は華氏58度（摂氏4度）です。",
         ["9月の平均最高気温は華氏58度です。1月は最も雨が多い月です。"]),
    ],
    ids=["en", "ja"],
)
def test_a_right_conversion_in_brackets_is_no_new_claim(
    judge: LexicalJudge, plain: str, converted: str, wrong: str, contexts: list[str]
) -> None:
    """An answer that adds "(15 degrees Celsius)" gives no number the contexts lack; one that adds
    "(4 degrees Celsius)" does."""
    plain_value = faithfulness(judge, plain, contexts)[0]
    assert faithfulness(judge, converted, contexts)[0] == pytest.approx(plain_value, abs=0.05)
    assert faithfulness(judge, wrong, contexts)[0] < 0.5 * plain_value


@pytest.mark.parametrize(
    ("plain", "with_silence", "contexts"),
    [
        ("Audit logs are kept for 90 days.",
         "Audit logs are kept for 90 days. However, they do not provide any specific steps for exporting them.",
         EN_CONTEXT),
        # Japanese says it impersonally (「提供されていません」): the noncommittal cues already take it.
        ("本社は名古屋市にあります。", "本社は名古屋市にあります。ただし、具体的な手順は提供されていません。",
         JA_CONTEXT),
    ],
    ids=["en-they-do-not-provide", "ja-teikyo-sarete-imasen"],
)
def test_the_documents_silence_told_with_a_pronoun_is_no_statement(
    judge: LexicalJudge, plain: str, with_silence: str, contexts: list[str]
) -> None:
    """"They do not provide any specific steps" says what the documents lack, as "The passages do
    not mention it" does; checked as a claim it was unsupported and pulled a faithful answer down."""
    assert faithfulness(judge, with_silence, contexts)[0] == pytest.approx(faithfulness(judge, plain, contexts)[0])


def test_a_pronoun_that_does_not_offer_a_thing_still_makes_a_statement(judge: LexicalJudge) -> None:
    _, detail = faithfulness(judge, "The store sells bicycles. They do not offer rentals.", EN_CONTEXT)
    assert len(detail["statements"]) == 2


@pytest.mark.parametrize(
    ("digits", "wrong", "contexts"),
    [
        ("If you have not seen them for 10 or 20 years, send a letter to the town hall.",
         "If you have not seen them for 30 or 40 years, send a letter to the town hall.",
         ["If you have not seen them for ten or even twenty years, send a letter to the town hall."]),
        ("The warranty covers twenty-five repairs.", "The warranty covers 26 repairs.",
         ["The warranty covers 25 repairs in all."]),
        ("10年以上会っていない場合は、市役所に手紙を送ってください。",
         "30年以上会っていない場合は、市役所に手紙を送ってください。",
         ["十年以上会っていない場合は、市役所に手紙を送ってください。"]),
        ("会費は三百円です。", "会費は400円です。", ["会費は300円です。"]),
    ],
    ids=["en-words-in-context", "en-words-in-answer", "ja-kanji-in-context", "ja-kanji-in-answer"],
)
def test_a_number_written_as_a_word_is_the_number(
    judge: LexicalJudge, digits: str, wrong: str, contexts: list[str]
) -> None:
    """"10 or 20 years" for "ten or even twenty years": the digits were numbers the contexts lack
    (decisive: the statement scored 0), the words were words the answer lacks."""
    right_value = faithfulness(judge, digits, contexts)[0]
    assert right_value > 0.8 and faithfulness(judge, wrong, contexts)[0] < 0.5 * right_value


@pytest.mark.parametrize(
    "text", ["one of the best", "一般的に十分です。数十年前のこと。"], ids=["en-one", "ja-not-counted"]
)
def test_a_word_that_only_looks_like_a_number_is_none(text: str) -> None:
    """"one" is as often a pronoun as a number; 一 and 十 begin words (一般, 十分 "enough"), and 数十年
    is "decades": none of them is a number to check."""
    assert not [t for t in content_tokens(text) if t.startswith("#")]


@pytest.mark.parametrize(
    ("plain", "hedged", "contexts"),
    [
        ("Audit logs are kept for 90 days.",
         "Audit logs are kept for 90 days. Without more information, it is difficult to definitively say which "
         "retention period is better for every team.", EN_CONTEXT),
        ("本社は名古屋市にあります。", "本社は名古屋市にあります。どちらが良いかは一概には言えません。", JA_CONTEXT),
        ("本社は名古屋市にあります。", "本社は名古屋市にあります。最適な方法を断定することは難しいです。", JA_CONTEXT),
    ],
    ids=["en-difficult-to-say", "ja-ichigai-ni-wa", "ja-dantei-muzukashii"],
)
def test_a_hedge_that_the_question_cannot_be_settled_is_no_statement(
    judge: LexicalJudge, plain: str, hedged: str, contexts: list[str]
) -> None:
    """"It is difficult to say which is better" says something about the answer, not the world;
    checked as a claim it was unsupported and pulled a careful, faithful answer down."""
    assert_adds_no_statement(judge, hedged, plain, contexts)


@pytest.mark.parametrize(
    "answer",
    ["It is hard to say exactly, but audit logs are kept for 90 days.", "It is difficult to predict earthquakes."],
    ids=["en-hedge-then-answer", "en-difficult-as-a-claim"],
)
def test_a_hedge_followed_by_an_answer_or_a_claim_about_difficulty_is_still_a_statement(
    judge: LexicalJudge, answer: str
) -> None:
    _, detail = faithfulness(judge, answer, EN_CONTEXT)
    assert len(detail["statements"]) == 1


@pytest.mark.parametrize(
    ("paraphrased", "invented", "contexts"),
    [
        ("A shallow clone copies just the metadata of a table. Making a shallow clone of a 2 TB table takes roughly "
         "10 seconds. Queries against a shallow clone are as quick as against the source table.",
         "A shallow clone copies only the table's metadata. Creating a shallow clone of a 2 TB table takes about 10 "
         "seconds. Queries on a shallow clone run as fast as on the source table. Shallow clones are removed by a "
         "nightly cleanup job after a month.", EN_CONTEXT),
        ("ポイントの期限は、最後にポイントをもらった日から1年です。1ポイントは1円として使用できます。"
         "会員になるのは無料ですが、公式アプリが要ります。",
         "会員ポイントの有効期限は、最後にポイントを獲得した日から1年間です。ポイントは1ポイント1円として使えます。"
         "会員登録は無料です。失効したポイントは問い合わせ窓口で復活できます。", JA_CONTEXT),
    ],
    ids=["en", "ja"],
)
def test_a_paraphrased_answer_ranks_above_a_copied_one_with_an_invented_sentence(
    judge: LexicalJudge, paraphrased: str, invented: str, contexts: list[str]
) -> None:
    """Each paraphrase kept only part of its lexical support, and averaged raw, three of them lost
    more than one invented sentence among copied ones: the verdict is now a step from "not
    supported" to "supported", as a judge's is."""
    assert faithfulness(judge, paraphrased, contexts)[0] > faithfulness(judge, invented, contexts)[0] + 0.05


@pytest.mark.parametrize(
    ("wrong", "contexts"),
    [
        ("Audit logs are kept for 90 days and exported every 7 days.",
         ["Audit logs are kept for 90 days and exported every 30 days to the archive."]),
        ("監査ログは90日間保存され、7日ごとに書き出されます。",
         ["監査ログは90日間保存され、30日ごとにアーカイブへ書き出されます。"]),
    ],
    ids=["en", "ja"],
)
def test_a_wrong_number_is_not_outvoted_by_right_ones(judge: LexicalJudge, wrong: str, contexts: list[str]) -> None:
    """One number of two wrong made the statement half supported; a wrong number makes it wrong."""
    assert faithfulness(judge, wrong, contexts)[0] < 0.1


@pytest.mark.parametrize(
    ("answer", "contexts"),
    [
        ("The gym is open from 7:00 to 23:00 on weekdays.",
         ["On weekdays the gym is open from 7 in the morning to 11 at night."]),
        ("ジムは平日は7時から23時まで営業しています。", ["ジムは平日は朝7時から夜11時まで営業しています。"]),
    ],
    ids=["en", "ja"],
)
def test_a_time_with_its_part_of_the_day_is_the_clock_time(judge: LexicalJudge, answer: str,
                                                            contexts: list[str]) -> None:
    """"11 at night" and 「夜11時」 are 23:00; read as 11:00 they made a faithful opening hour wrong."""
    assert faithfulness(judge, answer, contexts)[0] > 0.8


@pytest.mark.parametrize(
    ("plain", "announced", "contexts"),
    [
        ("Audit logs are kept for 90 days.",
         'Therefore, the answer to the question "How long are audit logs kept?" is:\nAudit logs are kept for 90 days.',
         EN_CONTEXT),
        ("Audit logs are kept for 90 days.", "So, the answer to your question is: audit logs are kept for 90 days.",
         EN_CONTEXT),
        ("Audit logs are kept for 90 days.",
         "Audit logs matter in several ways, such as:\n- Audit logs are kept for 90 days.", EN_CONTEXT),
        ("本社は名古屋市にあります。", "したがって、ご質問への答えは：\n本社は名古屋市にあります。", JA_CONTEXT),
        ("本社は名古屋市にあります。", "つまり、質問の答えは：本社は名古屋市にあります。", JA_CONTEXT),
    ],
    ids=["en-answer-is-colon", "en-answer-is-inline", "en-such-as", "ja-kotae-wa", "ja-kotae-wa-inline"],
)
def test_announcing_the_answer_is_no_part_of_a_statement(
    judge: LexicalJudge, plain: str, announced: str, contexts: list[str]
) -> None:
    """"Therefore, the answer to the question "..." is:" announces the claim that follows; as a
    statement it was unsupported (the question's words are no claim of the contexts)."""
    assert_adds_no_statement(judge, announced, plain, contexts)


@pytest.mark.parametrize(
    ("plain", "noted", "contexts"),
    [
        ("Audit logs are kept for 90 days.",
         "Audit logs are kept for 90 days. Note: The information provided in the given passages is sufficient to "
         "answer the question.", EN_CONTEXT),
        ("本社は名古屋市にあります。", "本社は名古屋市にあります。提供された情報で質問に回答できます。", JA_CONTEXT),
        ("本社は名古屋市にあります。", "本社は名古屋市にあります。文書の情報は質問に答えるのに十分です。", JA_CONTEXT),
    ],
    ids=["en-sufficient", "ja-kaito-dekimasu", "ja-juubun"],
)
def test_saying_the_documents_are_enough_to_answer_is_no_statement(
    judge: LexicalJudge, plain: str, noted: str, contexts: list[str]
) -> None:
    """"The information in the passages is sufficient to answer the question" is about the documents,
    as their silence is; checked as a claim it scored 0 and pulled a faithful answer down."""
    assert_adds_no_statement(judge, noted, plain, contexts)


def test_enough_for_something_else_is_still_a_statement(judge: LexicalJudge) -> None:
    _, detail = faithfulness(judge, "One 2 TB table is enough to answer every query.", EN_CONTEXT)
    assert len(detail["statements"]) == 1


@pytest.mark.parametrize(
    ("plain", "framed", "contexts"),
    [
        ("Audit logs are kept for 90 days.",
         "Alternatively, you can also try the following method:\n- Audit logs are kept for 90 days.", EN_CONTEXT),
        ("本社は名古屋市にあります。", "次の方法も試せます：\n・本社は名古屋市にあります。", JA_CONTEXT),
    ],
    ids=["en", "ja"],
)
def test_a_lead_in_naming_what_follows_is_no_statement(
    judge: LexicalJudge, plain: str, framed: str, contexts: list[str]
) -> None:
    """"Try the following method:" only leads into a list, like "as follows:"."""
    assert_adds_no_statement(judge, framed, plain, contexts)


@pytest.mark.parametrize(
    ("once", "repeated", "contexts"),
    [
        ("Audit logs are kept for 90 days. Audit logs are encrypted with a key from Leeds.",
         "Audit logs are kept for 90 days. Audit logs are encrypted with a key from Leeds. "
         "Audit logs are kept for 90 days.", EN_CONTEXT),
        ("本社は名古屋市にあります。本社の社員食堂は24時間営業です。",
         "本社は名古屋市にあります。本社の社員食堂は24時間営業です。本社は名古屋市にあります。", JA_CONTEXT),
    ],
    ids=["en", "ja"],
)
def test_a_claim_said_twice_is_one_statement(judge: LexicalJudge, once: str, repeated: str,
                                             contexts: list[str]) -> None:
    """Repeating a supported sentence (a summary line that says the first sentence again) counted it
    twice and hid the invented one between them."""
    value, detail = faithfulness(judge, repeated, contexts)
    assert len(detail["statements"]) == 2 and value == pytest.approx(faithfulness(judge, once, contexts)[0])



@pytest.mark.parametrize(
    ("answer", "contexts"),
    [
        ("The white pages are at https://www.pagesjaunes.fr/search.",
         ["The white pages are at http://pagesjaunes.fr/search in English."]),
        ("電話帳は https://www.pagesjaunes.fr/search です。", ["電話帳は http://pagesjaunes.fr/search です。"]),
    ],
    ids=["en", "ja"],
)
def test_a_link_is_the_same_link_with_another_scheme(judge: LexicalJudge, answer: str, contexts: list[str]) -> None:
    """"https://www." for the contexts' "http://": the scheme was a word the contexts lacked."""
    same_link = answer.replace("https://www.", "http://")
    expected = faithfulness(judge, same_link, contexts)[0]
    assert faithfulness(judge, answer, contexts)[0] == pytest.approx(expected, abs=0.01)


@pytest.mark.parametrize(
    ("question", "right", "wrong"),
    [
        ("how do I set up SSO",
         ["To set up SSO, open Settings > Security > SSO and upload your identity provider's metadata XML. "
          "Verify your domain before you turn SSO on."],
         ["Invoices are emailed on the first day of each month. You can download past invoices from Billing > "
          "History."]),
        ("SSOの設定方法",
         ["SSOを設定するには、設定のセキュリティからSSOを開き、IdPのメタデータXMLをアップロードします。"
          "有効にする前にドメインを確認してください。"],
         ["請求書は毎月1日にメールで送られます。過去の請求書は請求の履歴からダウンロードできます。"]),
    ],
    ids=["en", "ja"],
)
def test_a_retrieval_that_missed_the_topic_has_low_context_relevancy(
    judge: LexicalJudge, question: str, right: list[str], wrong: list[str]
) -> None:
    # Across records, not only against padding of the same passage: the wrong document's best
    # sentence is not needed as fully as the right one's.
    right_value = METRICS["context_relevancy"](judge, RecordText(question, right, "x"), Usage())[0]
    wrong_value = METRICS["context_relevancy"](judge, RecordText(question, wrong, "x"), Usage())[0]
    assert wrong_value < 0.15 < right_value


def test_a_passage_that_answers_in_other_words_still_ranks_above_itself_padded(judge: LexicalJudge) -> None:
    question = "子ども料金は何歳から必要ですか？"
    passage = "入館料は大人1,200円、小中学生600円です。未就学児は無料です。"
    padded = "地下鉄の初乗り運賃は180円です。" + passage + "富士山の標高は3776メートルです。"
    value, padded_value = (METRICS["context_relevancy"](judge, RecordText(question, [c], "x"), Usage())[0]
                           for c in (passage, padded))
    assert value > padded_value > 0.0
