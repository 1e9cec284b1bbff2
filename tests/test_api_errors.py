"""The app's API as a Python caller meets it: a real ``python app.py`` (tiny checkpoint) and
``gradio_client``. Bad input to any endpoint raises ``AppError`` carrying the message, and
the server logs one line for it, never a traceback (a traceback in the log means a bug)."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from tests.helpers import serve_app

SENTENCE = "the black cat sleeps."
pytestmark = pytest.mark.slow  # starts a server


@pytest.fixture(scope="module")
def server(tmp_path_factory, tiny_checkpoint):
    """``python app.py`` on the tiny checkpoint and a free port: (url, log file)."""
    with serve_app(
        tiny_checkpoint, tmp_path_factory.mktemp("api-app") / "app.log", extra=("--torch-threads", "1")
    ) as app:
        yield app.url, app.log


@pytest.fixture(scope="module")
def client(server):
    from gradio_client import Client

    return Client(server[0], verbose=False)


def new_log_lines(log: Path, start: int, wanted: str, timeout: float = 10.0) -> list[str]:
    """The server's log lines after the first ``start`` characters, once one holds ``wanted``
    (the handler logs before Gradio answers, but the file is read from another process)."""
    deadline = time.monotonic() + timeout
    while True:
        lines = log.read_text()[start:].splitlines()
        if any(wanted in line for line in lines) or time.monotonic() > deadline:
            return lines


BAD_INPUT = [
    ("/translate", ("",), "Please type an English sentence to translate."),
    ("/translate", ("x" * 50_001,), "That text has 50,001 characters"),
    ("/beam", (SENTENCE, 0), "The beam size must be a whole number from 1 to 8, got 0."),
    ("/beam", (SENTENCE, 9), "The beam size must be a whole number from 1 to 8, got 9."),
    ("/beam", ("", 4), "Please type an English sentence to translate."),
    ("/knockout", ("", "cross:0:1"), "Please type an English sentence to translate."),
    ("/knockout", (SENTENCE, "bogus"), "expected 'kind:layer:head'"),
    ("/knockout", (SENTENCE, ""), "No heads selected"),
    ("/head_importance", ("",), "Please type an English sentence to translate."),
    ("/contributions", ("", 0), "Please type an English sentence to translate."),
    ("/contributions", (SENTENCE, 999), "There is no step 999 here"),
    ("/decoder_lens", ("",), "Please type an English sentence to translate."),
    ("/score_reference", (SENTENCE, ""), "Type a reference translation (Italian) to score."),
]


@pytest.mark.parametrize("api, args, message", BAD_INPUT, ids=[f"{a}-{i}" for i, (a, _, _) in enumerate(BAD_INPUT)])
def test_bad_input_raises_app_error_and_logs_one_line(server, client, api, args, message):
    from gradio_client.exceptions import AppError

    log = server[1]
    start = len(log.read_text())
    with pytest.raises(AppError) as exc:
        client.predict(*args, api_name=api)
    assert message in str(exc.value)
    lines = new_log_lines(log, start, f"{api} refused")
    assert not [line for line in lines if "Traceback" in line], "\n".join(lines)
    refused = [line for line in lines if f"{api} refused" in line]
    assert len(refused) == 1 and message[:40] in refused[0], "\n".join(lines)
    assert len(lines) == 1, "\n".join(lines)  # nothing else: one line per refused call


def test_good_input_still_answers(client):
    """The shapes docs/python-api.md documents, for every endpoint."""
    translation, trace = client.predict(SENTENCE, api_name="/translate")
    assert isinstance(translation, str) and trace["schema"] == "transformer-trace/1"
    translation, data = client.predict(SENTENCE, "cross:0:1", api_name="/knockout")
    assert isinstance(translation, str) and data["text"] == SENTENCE and "error" not in data
    assert client.predict(SENTENCE, api_name="/head_importance")["text"] == SENTENCE
    best, tree = client.predict(SENTENCE, 2, api_name="/beam")
    assert isinstance(best, str) and tree["schema"] == "transformer-beam-tree/1"


def test_the_log_names_no_traceback_at_all(server, client):
    """Run after the others (file order): the whole log so far is free of tracebacks."""
    text = server[1].read_text()
    assert "Traceback" not in text and not re.search(r"^\s+File \"", text, re.MULTILINE), text[-3000:]
