"""Dev-only check of the learning rate and epoch cap of FMDA and DREAM on one MASSIVE pair.

Model selection here uses the MASSIVE **dev** split only, with the pipeline's criterion
(``fmda.training.select_on``: the dev accuracy@1 of ``emb_m`` by default, or the lowest mean
dev ``total`` loss; DREAM always the dev loss); no test figure is computed unless ``--test``.
For each learning rate it trains with the pipeline's own function (``train_fmda`` /
``train_pooled_head`` with ``fmda.methods.dream``) and prints the best dev loss, the epoch it came from, the epochs run
and the seconds taken.

Needs the pair's FMDA inputs (``data/04_feature/<pair>/fmda_inputs.json``), which any
``kedro run --pipelines=fmda`` writes.

Usage::

    .venv/bin/python -u experiments/dev_lr_check.py --pair en_de --method fmda --lrs 1e-4 3e-4 1e-3 --max-epochs 60
    .venv/bin/python -u experiments/dev_lr_check.py --pair en_de --method dream --lrs 1e-4 1e-3 --max-epochs 200
    .venv/bin/python -u experiments/dev_lr_check.py --pair en_de --lrs 1e-3 --select-on dev_retrieval --test

``--negatives pool|all`` draws DREAM's partners from the BLEU negative pool (FMDA's data) or from
every utterance of the split, and prints the kept model's dev accuracy@1 of its meaning embedding::

    .venv/bin/python -u experiments/dev_lr_check.py --pair en_de --method dream --lrs 1e-3 --max-epochs 200 \\
        --negatives all

``--variant`` trains an ``fmda.variants`` entry (its ``loss`` and ``training`` overrides) and
``--loss KEY=VALUE ...`` overrides ``fmda.loss`` on top; every FMDA run prints the kept model's
dev accuracy@1 of ``emb_m`` (both directions), the dev figure the loss defaults are chosen on::

    .venv/bin/python -u experiments/dev_lr_check.py --pair en_de --lrs 1e-3 --loss negative=linear
    .venv/bin/python -u experiments/dev_lr_check.py --pair en_de --lrs 1e-3 --variant infonce

``--baselines`` prints the dev accuracy@1 (both directions) of ``raw/mean`` and
``centering/mean`` (language means fitted on train, as the pipeline's baseline), the dev figures a
default must beat, and trains nothing::

    .venv/bin/python -u experiments/dev_lr_check.py --pair en_ja --baselines

``--model KEY=VALUE ...`` overrides ``fmda.model`` (e.g. ``utterance_target=mean``) and
``--training KEY=VALUE ...`` ``fmda.training`` (e.g. ``mixed_precision=bf16``).

``--select-on dev_retrieval`` selects FMDA's epoch by the dev accuracy@1 of ``emb_m`` instead of
the dev loss. ``--test`` then also prints the kept model's MASSIVE **test** rows (retrieval and
template retrieval), computed once, after selection, exactly as the pipeline's evaluation does.
"""

from __future__ import annotations

import argparse
import logging
import time

import numpy as np
import pandas as pd
import yaml

from language_agnostic.datasets.embeddings import EmbeddingManifestDataset
from language_agnostic.evaluation import fmda as fmda_evaluation
from language_agnostic.evaluation.retrieval import retrieval_accuracy_at_1
from language_agnostic.methods.centering import center, fit_language_means
from language_agnostic.training import fmda as nodes


def print_dev_baselines(manifest: dict) -> None:
    """Dev accuracy@1 of ``raw/mean`` and ``centering/mean`` in both directions and their mean."""
    sets, src, tgt = manifest["sets"], manifest["source_locale"], manifest["target_locale"]
    train = [np.asarray(sets[f"train.{side}.utt"].vectors("mean")) for side in ("source", "target")]
    means = fit_language_means(np.concatenate(train), [src] * len(train[0]) + [tgt] * len(train[1]))
    dev = [np.asarray(sets[f"dev.{side}.utt"].vectors("mean")) for side in ("source", "target")]
    centred = [center(dev[0], [src] * len(dev[0]), means), center(dev[1], [tgt] * len(dev[1]), means)]
    print(f"| baseline ({src}-{tgt}, MASSIVE dev) | {src}->{tgt} | {tgt}->{src} | mean |")
    print("|---|---:|---:|---:|")
    for name, (a, b) in (("raw/mean", dev), ("centering/mean", centred)):
        forward, backward = retrieval_accuracy_at_1(a, b), retrieval_accuracy_at_1(b, a)
        print(f"| {name} | {forward:.4f} | {backward:.4f} | {(forward + backward) / 2:.4f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pair", default="en_de")
    parser.add_argument("--method", choices=["fmda", "dream"], default="fmda")
    parser.add_argument("--lrs", type=float, nargs="+", default=[1e-4, 3e-4, 1e-3])
    parser.add_argument("--max-epochs", type=int, default=60)
    parser.add_argument("--patience", type=int, default=None, help="default: the configured one")
    parser.add_argument(
        "--select-on",
        choices=list(nodes.SELECTION),
        default=None,
        help="default: the configured fmda.training.select_on",
    )
    parser.add_argument(
        "--variant", default="all_together", help="an fmda.variants entry (its loss and training overrides)"
    )
    parser.add_argument(
        "--loss",
        nargs="*",
        default=[],
        metavar="KEY=VALUE",
        help="fmda.loss overrides on top of the variant's, e.g. negative=linear margin=0.2",
    )
    parser.add_argument(
        "--model", nargs="*", default=[], metavar="KEY=VALUE", help="fmda.model overrides, e.g. utterance_target=mean"
    )
    parser.add_argument(
        "--training",
        nargs="*",
        default=[],
        metavar="KEY=VALUE",
        help="fmda.training overrides, e.g. mixed_precision=bf16",
    )
    parser.add_argument("--seed", type=int, default=None, help="training seed (default: the configured one)")
    parser.add_argument(
        "--negatives",
        choices=["pool", "all"],
        default=None,
        help="DREAM's partners: the BLEU negative pool or every utterance (default: the configured one)",
    )
    parser.add_argument("--test", action="store_true", help="print the selected model's test rows")
    parser.add_argument(
        "--baselines", action="store_true", help="print the dev figures of raw/mean and centering/mean only"
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    params = yaml.safe_load(open("conf/base/parameters_fmda.yml"))["fmda"]
    manifest = EmbeddingManifestDataset(f"data/04_feature/{args.pair}/fmda_inputs.json").load()
    if args.baselines:
        print_dev_baselines(manifest)
        return
    pools = pd.read_parquet("data/03_primary/massive_negative_pools.parquet")
    print(f"{args.method} on {args.pair}: dev-only selection, max {args.max_epochs} epochs")
    print("| lr | best dev total | best epoch | epochs run | seconds |")
    print("|---|---:|---:|---:|---:|")
    dream = params["methods"]["dream"]
    # DREAM trains with fmda.training under its own overrides, as in the pipeline
    base = params["training"] if args.method == "fmda" else {**params["training"], **(dream.get("training") or {})}
    for lr in args.lrs:
        training = {
            **base,
            "lr": lr,
            "max_epochs": args.max_epochs,
            "progress": False,
            **({"patience": args.patience} if args.patience else {}),
            **({"seed": args.seed} if args.seed is not None else {}),
            **{k: yaml.safe_load(v) for k, v in (item.split("=", 1) for item in args.training)},
        }
        start = time.perf_counter()
        if args.method == "fmda":
            training["select_on"] = args.select_on or base.get("select_on", "dev_loss")
            spec = {k: v for k, v in (params["variants"].get(args.variant) or {}).items() if k != "pairs"}
            overrides = {k: yaml.safe_load(v) for k, v in (item.split("=", 1) for item in args.loss)}
            spec["loss"] = {**(spec.get("loss") or {}), **overrides}
            model_params = {
                **params["model"],
                **{k: yaml.safe_load(v) for k, v in (item.split("=", 1) for item in args.model)},
            }
            trained, history = nodes.train_fmda(
                manifest, pools, model_params, spec, training, params.get("loss"), variant=args.variant
            )
            pair = f"{manifest['source_locale']}-{manifest['target_locale']}"
            key = f"fmda.{args.variant}.{pair}.dev_total"
            print(f"kept epoch {trained['best_epoch']}: dev accuracy@1 of emb_m {trained['dev_m_accuracy']:.4f}")
            if training["select_on"] == "dev_retrieval":
                scores = [p["value"] for p in history[f"fmda.{args.variant}.{pair}.dev_score"]]
                print(
                    f"dev accuracy@1 of emb_m per epoch: {[round(x, 3) for x in scores]}; "
                    f"kept epoch {trained['best_epoch']}"
                )
            if args.test:
                rows = fmda_evaluation.evaluate_fmda(manifest, trained, {"name": "bundled"})
                print(rows[["embedding", "task", "source", "target", "metric", "value"]].to_string(index=False))
        else:
            spec = {**dream, "training": training, **({"negatives": args.negatives} if args.negatives else {})}
            trained, history = nodes.train_pooled_head(
                manifest, pools, spec, params["training"], params.get("loss"), "dream"
            )
            key = f"dream.{manifest['source_locale']}-{manifest['target_locale']}.dev_total"
            print(
                f"negatives {trained['negatives']}: kept epoch {trained['best_epoch']}, "
                f"dev accuracy@1 of the meaning embedding {trained['dev_m_accuracy']:.4f}"
            )
        seconds = time.perf_counter() - start
        dev = [(r["value"], r["step"]) for r in history[key]]
        best, epoch = min(dev)
        print(f"| {lr:g} | {best:.4f} | {epoch} | {len(dev)} | {seconds:.0f} |", flush=True)
        print(
            "(best dev total is the lowest dev loss seen; "
            "with --select-on dev_retrieval the kept epoch is printed above)"
        )


if __name__ == "__main__":
    main()
