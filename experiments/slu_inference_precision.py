"""en-US dev scores and seconds of the saved `zsjoint` and `lajoint` models predicted in fp32 and under bf16 autocast.

The evidence for predicting SLU test splits under the training's bf16 autocast (``precision`` of
``predict_slu`` / ``predict_lajmcl``, docs/slu.md): how much the scores move and what it saves.
Needs a finished ``kedro run --pipelines=slu`` (``data/06_models/slu/``). Reads en-US dev only.

``--profile``: also cProfile ``lajoint``'s fp32 prediction of the de-DE test split (where its time goes).

Usage::

    .venv/bin/python -u experiments/slu_inference_precision.py
    .venv/bin/python -u experiments/slu_inference_precision.py --profile
"""

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))  # slu_speed.slu_inputs
from slu_speed import slu_inputs

from language_agnostic.datasets.torch_state import TrainedHeadDataset
from language_agnostic.evaluation.slu import slu_scores
from language_agnostic.methods.registry import load_trained
from language_agnostic.training.lajmcl import predict_lajmcl
from language_agnostic.training.slu_predict import predict_slu

params, extraction, rows, encoder, languages, dictionaries = slu_inputs("../shared/data")
dev = rows[(rows.locale == "en-US") & (rows.partition == "dev")]
gold = [list(x) for x in dev["labels"]]
for name in ("zsjoint", "lajoint"):
    art = TrainedHeadDataset(filepath=f"data/06_models/slu/{name}.safetensors").load()
    laj = art["build"]["method"] == "lajoint"
    _, model = load_trained(art, encoder)
    for mode in ("fp32", "bf16"):
        s = time.perf_counter()
        precision = "bf16" if mode == "bf16" else "no"
        if laj:
            i, l = predict_lajmcl(
                model, dev, encoder, art["intents"], art["labels"], len(art["slots"]), extraction, precision=precision
            )
        else:
            i, l = predict_slu(model, dev, encoder, art["intents"], art["labels"], extraction, precision=precision)
        sc = slu_scores(dev["intent"].tolist(), i, gold, l)
        print(name, mode, round(time.perf_counter() - s, 1), "s", {k: round(v, 4) for k, v in sc.items()}, flush=True)
    if laj and "--profile" in sys.argv:
        import cProfile
        import pstats

        test = rows[(rows.locale == "de-DE") & (rows.partition == "test")]
        profile = cProfile.Profile()
        profile.runcall(
            predict_lajmcl, model, test, encoder, art["intents"], art["labels"], len(art["slots"]), extraction
        )
        pstats.Stats(profile).sort_stats("tottime").print_stats(8)
