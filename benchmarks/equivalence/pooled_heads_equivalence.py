"""Every pooled-vector head of the registry (DREAM, DREAM-InfoNCE, MEAT, SEED, linear InfoNCE): losses,
gradients and encodings on fixed random batches, for an old/new tree comparison::

    PYTHONPATH=/path/to/old/src python benchmarks/equivalence/pooled_heads_equivalence.py save /tmp/old.pt
    PYTHONPATH=src python benchmarks/equivalence/pooled_heads_equivalence.py save /tmp/new.pt
    python benchmarks/equivalence/pooled_heads_equivalence.py compare /tmp/old.pt /tmp/new.pt
"""

from __future__ import annotations

import sys

import torch

HEADS = ("dream", "dream-infonce", "meat", "seed", "linear-infonce")


def _settings(name: str, trial: int) -> tuple[dict, dict | None]:
    """Options and loss weights: the defaults, then a changed activation / weight, then a temperature."""
    options: dict = {"activation": "relu"} if name.startswith("dream") and trial == 1 else {}
    if name.endswith("infonce") and trial == 2:
        options["temperature"] = 0.1
    weights = {"uniform": 0.3} if name == "meat" else {"meaning": 0.5}
    return options, weights if trial == 1 and name != "linear-infonce" else None


def tensors() -> dict[str, torch.Tensor]:
    from language_agnostic.methods.registry import METHODS, build

    out = {}
    for name in HEADS:
        for trial in range(3):
            torch.manual_seed(trial)
            options, weights = _settings(name, trial)
            model = build(name, 8, 3, options)
            batch = {k: torch.randn(5, 8) for k in ("s", "t", "s2", "t2")}
            batch["s_lang"], batch["t_lang"] = torch.randint(0, 3, (5,)), torch.randint(0, 3, (5,))
            losses = METHODS[name].losses(model, batch, weights, options)
            losses["total"].backward()
            out |= {f"{name}/{trial}/loss/{k}": v.detach() for k, v in losses.items()}
            out |= {f"{name}/{trial}/grad/{k}": p.grad.clone() for k, p in model.named_parameters()}
            out |= {
                f"{name}/{trial}/encode/{k}": v.detach() for k, v in METHODS[name].encode(model, batch["s"]).items()
            }
    return out


if __name__ == "__main__":
    if sys.argv[1] == "save":
        torch.save(tensors(), sys.argv[2])
    else:
        old, new = torch.load(sys.argv[2]), torch.load(sys.argv[3])
        found = [
            k for k in sorted(set(old) | set(new)) if k not in old or k not in new or not torch.equal(old[k], new[k])
        ]
        print("\n".join(found) or f"identical: {len(old)} tensors torch.equal")
        sys.exit(1 if found else 0)
