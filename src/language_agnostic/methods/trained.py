"""Trained models as files: the safetensors format, fetching one from an MLflow run, and which encoder it expects.

A trained head reads the states of the encoder it was trained on; applied to another
encoder's states it gives numbers, not an error, so every use checks (:func:`check_encoder`).
"""

from __future__ import annotations

import json
import logging
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from language_agnostic.config import ParameterError

logger = logging.getLogger(__name__)

TRAINED_BY_TAG = "language_agnostic.trained_by"


class ModelLookupError(ParameterError):
    """A trained model that a parameter names cannot be used: a missing file, an unknown run, a run
    without the model, a model of another encoder. A run that stops on one prints its message alone."""


def read_artifact(path: str | Path) -> dict[str, Any]:
    """``{"state_dict": {name: tensor}, <metadata>}`` from a ``.safetensors`` file written by :func:`write_artifact`."""
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as handle:
        state = {key: handle.get_tensor(key) for key in handle.keys()}
        info = json.loads((handle.metadata() or {}).get("info", "{}"))
    return {**info, "state_dict": state}


def write_artifact(data: Mapping[str, Any], path: str | Path) -> Path:
    """Weights as safetensors, every other key as JSON metadata in the same file."""
    from safetensors.torch import save_file

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    info = {k: v for k, v in data.items() if k != "state_dict"}
    save_file(
        {k: v.contiguous() for k, v in data["state_dict"].items()}, str(path), metadata={"info": json.dumps(info)}
    )
    return path


def _client(tracking_uri: str | None) -> Any:
    from mlflow import MlflowClient

    return MlflowClient(tracking_uri=tracking_uri)


def _run(run_id: str, where: str, tracking_uri: str | None) -> Any:
    from mlflow.exceptions import MlflowException

    client = _client(tracking_uri)
    try:
        return client.get_run(run_id)
    except MlflowException:
        raise ModelLookupError(f"{where}: no MLflow run {run_id!r} in {client.tracking_uri}") from None


def load_from_run(run_id: str, artifact: str, where: str, tracking_uri: str | None = None) -> dict[str, Any]:
    """The trained model an MLflow run logged as ``artifact`` (a ``.safetensors`` path within the run).

    A run that reused a stored model without holding its file (logged before reused runs did) is
    followed to the run that trained it (its ``language_agnostic.trained_by`` tag).

    Raises:
        ModelLookupError: An unknown run id, a run without that artifact (lists the ``.safetensors``
            it has), or a file that cannot be fetched or read; one line each.
    """
    from mlflow.exceptions import MlflowException
    from safetensors import SafetensorError

    run = _run(run_id, f"{where}.run_id", tracking_uri)
    client = _client(tracking_uri)
    try:
        found = _safetensors(client, run.info.run_id)
        trained_by = run.data.tags.get(TRAINED_BY_TAG)
        if artifact not in found and trained_by and trained_by != "None" and trained_by != run_id:
            logger.info(
                "%s: MLflow run %s reused the model of run %s; loading it from there", where, run_id, trained_by
            )
            return load_from_run(trained_by, artifact, where, tracking_uri)
        if artifact not in found:
            raise ModelLookupError(
                f"{where}.artifact: MLflow run {run_id} has no artifact {artifact!r}; "
                f"its .safetensors artifacts: {sorted(found)}"
            )
        with tempfile.TemporaryDirectory() as tmp:
            local = client.download_artifacts(run.info.run_id, artifact, tmp)
            return read_artifact(local)
    except ModelLookupError:
        raise
    except MlflowException as exc:
        raise ModelLookupError(f"{where}: MLflow run {run_id}: {_first_line(exc.message)}") from None
    except (OSError, ValueError, SafetensorError) as exc:  # a truncated or altered file
        raise ModelLookupError(
            f"{where}: MLflow run {run_id}: {artifact!r} cannot be read: {_first_line(exc)}"
        ) from None


def _first_line(exc: object) -> str:
    return (str(exc).strip().splitlines() or [""])[0]


def _safetensors(client: Any, run_id: str, path: str | None = None) -> list[str]:
    out = []
    for item in client.list_artifacts(run_id, path):
        if item.is_dir:
            out += _safetensors(client, run_id, item.path)
        elif item.path.endswith(".safetensors"):
            out.append(item.path)
    return out


def trained_encoder(saved: Mapping[str, Any], tracking_uri: str | None = None) -> dict[str, Any] | None:
    """The identity of the encoder a model was trained on, or ``None`` when nothing records it.

    Models record it themselves (``encoder``); older ones are traced through the MLflow run
    that trained them (``mlflow_run_id``) to its Kedro run's ``encoder.json`` artifact.
    """
    if saved.get("encoder"):
        return dict(saved["encoder"])
    run_id = saved.get("mlflow_run_id")
    if not run_id:
        return None
    from mlflow.exceptions import MlflowException

    client = _client(tracking_uri)
    try:
        run = client.get_run(str(run_id))
        parent = run.data.tags.get("mlflow.parentRunId")
        for candidate in [run.info.run_id, parent] if parent else [run.info.run_id]:
            if any(item.path == "encoder.json" for item in client.list_artifacts(candidate)):
                with tempfile.TemporaryDirectory() as tmp:
                    return json.loads(Path(client.download_artifacts(candidate, "encoder.json", tmp)).read_text())
    except MlflowException:
        return None
    return None


def check_encoder(
    saved: Mapping[str, Any], identity: Mapping[str, Any], source: str, where: str, tracking_uri: str | None = None
) -> None:
    """Stop when ``saved`` was trained on another encoder than ``identity`` (the configured one).

    Compares the state size always, and the weights hash (else the name) when the model's
    encoder is recorded (:func:`trained_encoder`); when it is not, says so in the log.

    Args:
        saved: The trained model (its ``build.dim`` and metadata).
        identity: The configured encoder's identity (``encoder_identity``).
        source: Where the model came from (a path or a run), for the message.
        where: The parameter that chose the model.

    Raises:
        ModelLookupError: Another state size or another encoder, naming both and ``embeddings.encoder.name``.
    """
    dim = int((saved.get("build") or {}).get("dim", 0))
    hidden = int(identity.get("hidden_size", 0))
    if dim and hidden and dim != hidden:
        raise ModelLookupError(
            f"{where}: {source} was trained on {dim}-dimensional encoder states, but the configured encoder "
            f"{identity.get('name')!r} (embeddings.encoder.name) gives {hidden}; "
            "configure the encoder it was trained with"
        )
    trained = trained_encoder(saved, tracking_uri)
    if trained is None:
        logger.warning(
            "%s: %s does not record its encoder and its MLflow run is not in this tracking store; "
            "only the state size (%d) was checked against %s",
            where,
            source,
            dim,
            identity.get("name"),
        )
        return
    same = (
        trained.get("weights_sha256") == identity.get("weights_sha256")
        if trained.get("weights_sha256") and identity.get("weights_sha256")
        else trained.get("name") == identity.get("name")
    )
    if not same:
        raise ModelLookupError(
            f"{where}: {source} was trained with encoder {trained.get('name')!r} (weights "
            f"{str(trained.get('weights_sha256'))[:12]}), but embeddings.encoder.name configures "
            f"{identity.get('name')!r} (weights {str(identity.get('weights_sha256'))[:12]}); "
            "configure the encoder it was trained with"
        )


def load_over_base(model: torch.nn.Module, artifact: Mapping[str, Any], what: str) -> torch.nn.Module:
    """``model`` (a copy of the base encoder inside) with the artifact's tensors loaded over it, in eval mode.

    Raises:
        ValueError: the artifact holds no tensor, or ones that do not fit (another encoder, label or slot set).
    """
    if not artifact["state_dict"]:
        raise ValueError(f"this {what} artifact holds no weights")
    try:
        missing, unexpected = model.load_state_dict(artifact["state_dict"], strict=False)
    except RuntimeError as exc:  # a tensor of another shape
        raise ValueError(f"this {what} artifact does not fit the encoder: {str(exc)[:300]}") from None
    if unexpected or any(not k.startswith("encoder.") for k in missing):
        raise ValueError(
            f"this {what} artifact does not fit the encoder: unexpected {unexpected[:3]}, missing {missing[:3]}"
        )
    model.eval()
    return model
