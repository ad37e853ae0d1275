"""EMU's Figure 2 sample: the same ids in every locale, the most frequent intents, seeded."""

from __future__ import annotations

import numpy as np

from language_agnostic.reporting.figures import figure_sample


def test_figure_sample_takes_the_same_ids_of_the_most_frequent_intents_in_every_locale():
    ids = {"en-US": ["1", "2", "3", "4", "5", "6", "7"], "de-DE": ["7", "6", "5", "4", "3", "2"]}  # de lacks id 1
    intents = {"en-US": ["a", "b", "b", "c", "c", "c", "a"], "de-DE": ["a", "c", "c", "c", "b", "b"]}
    rows = figure_sample(intents, ids, n_intents=2, per_intent=2, seed=0)
    # among the common ids 2..7: c three times (4, 5, 6), b twice (2, 3), a once (7): c and b are kept
    en = [ids["en-US"][i] for i in rows["en-US"]]
    de = [ids["de-DE"][i] for i in rows["de-DE"]]
    assert en == de and len(en) == 4
    assert set(en[:2]) <= {"4", "5", "6"} and set(en[2:]) == {"2", "3"}
    assert [intents["en-US"][i] for i in rows["en-US"]] == ["c", "c", "b", "b"]
    again = figure_sample(intents, ids, n_intents=2, per_intent=2, seed=0)
    assert all(np.array_equal(rows[k], again[k]) for k in rows)  # seeded


def _template_data() -> tuple:
    import pandas as pd

    # music: templates A (3 utterances), B (2), C (1); alarm: D (2), E (2); weather: F (4)
    spec = (
        [("music", "A")] * 3
        + [("music", "B")] * 2
        + [("music", "C")]
        + [("alarm", "D")] * 2
        + [("alarm", "E")] * 2
        + [("weather", "F")] * 4
    )
    ids = [str(i) for i in range(len(spec))]
    utterances = pd.DataFrame(
        {
            "locale": "en-US",
            "id": ids,
            "partition": "test",
            "utt": [f"u{i}" for i in ids],
            "intent": [intent for intent, _ in spec],
        }
    )
    masked = pd.DataFrame({"locale": "en-US", "id": ids, "partition": "test", "template_text": [t for _, t in spec]})
    return utterances, masked, {"test": ids, "dev": []}


def test_template_sample_chooses_the_intent_with_most_templates_and_fails_loudly():
    import pytest

    from language_agnostic.reporting.figures import template_sample

    utterances, masked, ids = _template_data()
    # per_template 2: music and alarm have 2 templates each; music's have more utterances (5 against 4)
    intent, rows = template_sample(utterances, masked, "en-US", ids, "test", "auto", 4, 2, 0)
    assert intent == "music" and rows["template"].tolist() == ["A", "A", "B", "B"]
    assert set(rows["id"]) <= {"0", "1", "2", "3", "4"}
    intent, rows = template_sample(utterances, masked, "en-US", ids, "test", "alarm", 4, 2, 0)
    assert intent == "alarm" and rows["template"].tolist() == ["D", "D", "E", "E"]
    # only ids of the pair's split count: without utterance 0, A has 2 left
    _, rows = template_sample(utterances, masked, "en-US", {"test": ids["test"][1:]}, "test", "music", 4, 2, 0)
    assert sorted(rows["id"]) == ["1", "2", "3", "4"]
    with pytest.raises(ValueError, match=r"fmda.figure.intent 'weather' has 1 template\(s\) with per_template=2"):
        template_sample(utterances, masked, "en-US", ids, "test", "weather", 4, 2, 0)
    with pytest.raises(ValueError, match="no intent of en-US test has a template with per_template=5"):
        template_sample(utterances, masked, "en-US", ids, "test", "auto", 4, 5, 0)
    with pytest.raises(ValueError, match="fmda.figure.split must be one of"):
        template_sample(utterances, masked, "en-US", ids, "train", "auto", 4, 2, 0)
