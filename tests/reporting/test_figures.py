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
