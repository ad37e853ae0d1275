"""What a short SLU training learns on en-US dev: the evidence behind the LAJ methods' reduced setting.

Trains ``slu.methods`` entries of ``conf/base`` (``method: slu`` or ``lajoint``) on a seeded sample of
``--max-train`` en-US train utterances for ``--epochs`` epochs, with ``conf/base``'s ``slu.data`` and
``slu.training`` (bf16 where native, fused AdamW), the method's own ``data`` / ``training`` overrides
replaced by ``--set`` values, and prints the kept checkpoint's en-US **dev** exact match, intent accuracy
and slot F1 with the wall-clock seconds (setup, training, the dev scoring). Nothing here reads a test split.

``--set KEY=VALUE`` sets ``slu.training.KEY``; ``--set data.KEY=VALUE`` sets ``slu.data.KEY``;
``--option KEY=VALUE`` sets a method option (``slot_temperature``, ``margins``, ``compressor``, ...).
``--env NAME`` also finds methods in ``conf/NAME/parameters_slu.yml`` (e.g. ``slu_ablations``).
Code-switched methods (``cosda``, ``lajoint-cs``, ``lajmcl``) take the MUSE dictionaries under
``--raw-data-root``.

Needs ``data/03_primary/massive_slu.parquet`` (any ``kedro run --pipelines=slu``).

Usage::

    .venv/bin/python -u experiments/slu_budget_dev.py --methods zsjoint --max-train 2000 --set data.batch_size=8 \\
        --set lr=5e-3 --set encoder_lr=1e-4
    .venv/bin/python -u experiments/slu_budget_dev.py --env slu_ablations --methods lajoint-cs+scl --max-train 2000 \\
        --set data.batch_size=8 --set lr=5e-3 --set encoder_lr=1e-4 --option slot_temperature=0.0625
"""

from __future__ import annotations

import argparse
import logging
import platform
import sys
import time
from pathlib import Path
from typing import Any

import torch
import yaml

# slu_inputs is the speed benchmark's own batch builder: one definition of the inputs both time and score
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from slu_speed import slu_inputs

from language_agnostic.pipelines.config_loader import expand_budgets
from language_agnostic.training.finetune import FineTuning
from language_agnostic.training.lajmcl import train_lajmcl
from language_agnostic.training.slu import train_slu
from language_agnostic.training.slu_methods import method_settings


def parse_value(value: str) -> Any:
    """A command-line value read as YAML (``5e-3`` → 0.005: YAML 1.1 reads it as a string, a number was meant)."""
    parsed = yaml.safe_load(value)
    if isinstance(parsed, str):
        try:
            parsed = float(parsed)
        except ValueError:
            pass
    return parsed


def parse_sets(values: list[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``--set`` values as ``(training, data)`` overrides, each value read as YAML (:func:`parse_value`)."""
    training: dict[str, Any] = {}
    data: dict[str, Any] = {}
    for item in values:
        key, value = assignment(item, "--set", "KEY=VALUE or data.KEY=VALUE")
        (data if key.startswith("data.") else training)[key.removeprefix("data.")] = value
    return training, data


def parse_options(values: list[str]) -> dict[str, Any]:
    """``--option KEY=VALUE`` values as method options."""
    return dict(assignment(item, "--option", "KEY=VALUE") for item in values)


def assignment(item: str, flag: str, expected: str) -> tuple[str, Any]:
    """``KEY=VALUE`` as ``(key, parse_value(value))``; anything else ends the script naming ``flag``."""
    key, sep, value = item.partition("=")
    if not sep or not key:
        raise SystemExit(f"{flag} {item!r}: expected {expected}")
    return key, parse_value(value)


def add_env_methods(params: dict[str, Any], env: str | None) -> None:
    """Add (or replace) ``params["methods"]`` with ``slu.methods`` of ``conf/<env>/parameters_slu.yml``."""
    if env:
        with open(f"conf/{env}/parameters_slu.yml", encoding="utf-8") as file:
            methods = dict(yaml.safe_load(file)["slu"]["methods"])
        methods.pop("_replace", None)
        # each `budget:` written out from conf/base's slu.budgets, as the config loader does for a run
        block = {"slu": {"budgets": params.get("budgets") or {}, "methods": methods}}
        params["methods"].update(expand_budgets(block)["slu"]["methods"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--methods", nargs="+", default=["zsjoint"], help="slu.methods entries of conf/base")
    parser.add_argument("--max-train", type=int, default=2000)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--train-layers", type=int, default=6)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--option", action="append", default=[], metavar="KEY=VALUE", help="a method option")
    parser.add_argument("--env", default=None, help="also read slu.methods of conf/ENV/parameters_slu.yml")
    parser.add_argument("--raw-data-root", default="../shared/data", help="where muse/ is")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    sets, data_sets = parse_sets(args.set)
    options = parse_options(args.option)
    params, extraction, rows, encoder, languages, dictionaries = slu_inputs(args.raw_data_root)
    add_env_methods(params, args.env)
    layers = sets.get(
        "train_layers", args.train_layers
    )  # --set train_layers=null (every layer) wins over --train-layers
    print(
        f"machine: {platform.processor() or platform.machine()}, torch {torch.__version__}, "
        f"threads {torch.get_num_threads()}; "
        f"{args.max_train} en-US utterances, {args.epochs} epoch(s), "
        f"{'every layer' if layers is None else f'top {layers} layers'} training, set {sets} data {data_sets} "
        f"options {options}"
    )
    print(
        "| method | seconds | kept epoch | dev exact match | dev intent accuracy | dev slot F1 |\n"
        "|---|---:|---:|---:|---:|---:|"
    )
    for name in args.methods:
        if name not in params["methods"]:
            raise SystemExit(
                f"--methods: {name!r} is not in slu.methods ({list(params['methods'])}); --env adds an env's"
            )
        spec = dict(params["methods"][name])
        spec["options"] = {**dict(spec.get("options") or {}), **options}
        method, _, _ = method_settings(
            name, {k: v for k, v in spec.items() if k != "code_switch"}
        )  # its overrides: --set
        data = {**params["data"], "max_train": args.max_train, **data_sets}
        if spec.get("code_switch"):
            data["code_switch"] = {**params["code_switch"], "languages": languages}
        training = {
            **params["training"],
            "max_epochs": args.epochs,
            "train_layers": args.train_layers,
            "progress": False,
            **sets,
        }
        trainer = train_lajmcl if spec["method"] == "lajoint" else train_slu
        start = time.perf_counter()
        _, _, info = trainer(
            rows,
            encoder,
            FineTuning(name, method, data, training, extraction),
            dictionaries if spec.get("code_switch") else None,
        )
        print(
            f"| {name} | {time.perf_counter() - start:.0f} | {info['best_epoch']} of {info['epochs_run']} "
            f"| {info['dev_exact_match']:.4f} | {info['dev_intent_accuracy']:.4f} "
            f"| {info['dev_slot_f1']:.4f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
