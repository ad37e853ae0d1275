"""A data or configuration error ends a run with its message alone (pipelines/errors.py)."""

from __future__ import annotations

import pytest

from language_agnostic.config import ParameterError
from language_agnostic.corpora.errors import CorpusFormatError
from language_agnostic.methods.registry import check_ablations
from language_agnostic.parameters.base import validated
from language_agnostic.parameters.embeddings import Extraction
from language_agnostic.parameters.fmda import FmdaTraining
from language_agnostic.pipelines.errors import excepthook, user_error


def _raised(exc: BaseException) -> BaseException:
    try:
        raise exc
    except BaseException as caught:
        return caught


def _wrapped() -> BaseException:
    """How Kedro hands it over: a DatasetError raised from the project's error."""
    try:
        try:
            raise CorpusFormatError("massive/de-DE.jsonl:7: missing 'annot_utt'")
        except CorpusFormatError as exc:
            raise RuntimeError("Failed while loading data from dataset massive_archive") from exc
    except RuntimeError as outer:
        return outer


def test_the_project_error_is_found_in_the_chain():
    found = user_error(_wrapped())
    assert isinstance(found, CorpusFormatError) and "de-DE.jsonl:7" in str(found)
    assert user_error(_raised(KeyError("a bug"))) is None


def test_a_user_error_prints_its_message_alone(capsys, monkeypatch):
    monkeypatch.delenv("LANGUAGE_AGNOSTIC_TRACEBACK", raising=False)
    calls = []
    hook = excepthook(lambda *args: calls.append(args))
    exc = _wrapped()
    hook(type(exc), exc, exc.__traceback__)
    err = capsys.readouterr().err
    assert err == (
        "\nError (CorpusFormatError): massive/de-DE.jsonl:7: missing 'annot_utt'\n"
        "(no traceback for a data or configuration error; LANGUAGE_AGNOSTIC_TRACEBACK=1 shows it)\n"
    )
    assert calls == []  # Python's traceback printer was not called


@pytest.mark.parametrize(("exc", "variable"), [(KeyError("a bug"), ""), (_wrapped(), "1")])
def test_a_bug_or_the_variable_keeps_the_traceback(capsys, monkeypatch, exc, variable):
    monkeypatch.setenv("LANGUAGE_AGNOSTIC_TRACEBACK", variable)
    calls = []
    excepthook(lambda *args: calls.append(args))(type(exc), exc, exc.__traceback__)
    assert len(calls) == 1 and capsys.readouterr().err == ""


def test_a_rejected_parameter_names_its_path_and_prints_alone(capsys, monkeypatch):
    """A parameter model rejects a value: the error is a parameter error naming where it is."""
    monkeypatch.delenv("LANGUAGE_AGNOSTIC_TRACEBACK", raising=False)
    with pytest.raises(ParameterError) as raised:
        validated(FmdaTraining, {"max_epochs": 0}, "fmda.training")
    assert str(raised.value) == "fmda.training.max_epochs: must be >= 1, got 0"
    with pytest.raises(ParameterError, match=r"^qe.ablations.x.base must be one of \['dream', 'meat', 'seed'\]"):
        check_ablations({"x": {"base": "emu", "seed": 1}}, "qe")
    calls = []
    hook = excepthook(lambda *args: calls.append(args))
    hook(type(raised.value), raised.value, raised.value.__traceback__)
    assert capsys.readouterr().err.startswith(
        "\nError (ParameterError): fmda.training.max_epochs: must be >= 1, got 0\n"
    )
    assert calls == []
    with pytest.raises(ParameterError, match=r"^embeddings.extraction.processes: "):
        validated(Extraction, {"processes": -1}, "embeddings.extraction")
