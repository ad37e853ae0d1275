"""The run hook that records what the per-text embedding store did (MLflow metrics and the log)."""

from __future__ import annotations

import logging
from pathlib import Path

import mlflow
import numpy as np
import pytest

from language_agnostic.encoders.store import USAGE
from language_agnostic.pipelines.tracking_hook import EmbeddingStoreHook


def test_store_figures_go_to_the_active_mlflow_run(tmp_path: Path, caplog: pytest.LogCaptureFixture):
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    try:
        _check_logging(caplog)
    finally:
        mlflow.set_tracking_uri(previous)


def _check_logging(caplog: pytest.LogCaptureFixture) -> None:
    hook = EmbeddingStoreHook()
    experiment = mlflow.create_experiment("store-hook")
    with mlflow.start_run(experiment_id=experiment) as run:
        hook.before_pipeline_run({})
        hook.after_node_run()  # a node that asked nothing of the store: nothing logged
        USAGE.note_request("ns", np.array([b"a" * 16, b"b" * 16, b"a" * 16], dtype="S16"))
        USAGE.encoded, USAGE.seconds, USAGE.forward_seconds = 2, 4.0, 1.0
        hook.after_node_run()
        USAGE.note_request("ns", np.array([b"b" * 16], dtype="S16"))  # a later node: all reused
        hook.after_node_run()
        with caplog.at_level(logging.INFO):
            hook.after_pipeline_run()
    client = mlflow.tracking.MlflowClient()
    history = {
        m: [(x.step, x.value) for x in client.get_metric_history(run.info.run_id, f"embedding_store.{m}")]
        for m in ("texts_requested", "texts_distinct", "texts_encoded", "texts_reused", "forward_texts_per_s")
    }
    assert history["texts_requested"] == [(1, 3.0), (2, 4.0)]
    assert history["texts_distinct"] == [(1, 2.0), (2, 2.0)]
    assert history["texts_encoded"] == [(1, 2.0), (2, 2.0)]
    assert history["texts_reused"] == [(1, 1.0), (2, 2.0)]
    assert history["forward_texts_per_s"] == [(1, 2.0), (2, 2.0)]
    assert (
        "embedding store: 4 texts requested (2 distinct), 2 encoded, 2 reused; 2 texts/s in forward passes"
        in caplog.text
    )
    hook.before_pipeline_run({})
    assert USAGE.requested == 0 and USAGE.distinct == 0
