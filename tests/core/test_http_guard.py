"""The Host check and credential parsing on arbitrary header values (hypothesis): never an
exception, and only the configured credentials, written as HTTP allows, get through."""

from __future__ import annotations

import base64

from hypothesis import given, settings
from hypothesis import strategies as st

from ragpulse.core.http_guard import AuthConfig, RequestGuard

TOKENS = ["tok-1", "another.token_2"]
USERS = {"ops": "pässwörd", "ci": "x:y"}
GUARD = RequestGuard(AuthConfig(bearer_tokens=TOKENS, basic_users=USERS), [], "127.0.0.1")
ACCEPTED = {f"Bearer {t}" for t in TOKENS} | {
    "Basic " + base64.b64encode(f"{u}:{p}".encode()).decode() for u, p in USERS.items()}
# Header values as the standard library hands them over: latin-1 text, any of it.
HEADER = st.text(st.characters(max_codepoint=255), max_size=80)
FUZZ = settings(max_examples=300, derandomize=True, database=None)


def normal(authorization: str) -> str:
    scheme, _, rest = authorization.strip().partition(" ")
    return f"{scheme.capitalize()} {rest.strip()}"


@given(HEADER | st.sampled_from(sorted(ACCEPTED)).map(lambda a: a.lower()[:6] + a[6:] + " "))
@FUZZ
def test_only_configured_credentials_get_through(authorization: str) -> None:
    refusal = GUARD.check("localhost", authorization)
    assert (refusal is None) == (normal(authorization) in ACCEPTED), authorization
    if refusal is not None:
        assert refusal.status == 401 and "Basic" in refusal.headers["WWW-Authenticate"]


@given(HEADER)
@FUZZ
def test_any_host_value_gets_an_answer_and_names_need_a_listing(host: str) -> None:
    refusal = GUARD.check(host, f"Bearer {TOKENS[0]}")
    assert refusal is None or refusal.status == 421
    if refusal is None:
        name = host.strip().lower().rsplit(":", 1)[0].strip("[]").rstrip(".")
        assert name == "localhost" or any(c.isdigit() or c == ":" for c in name), host
