"""Errors and reject bookkeeping shared by every corpus reader."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Literal

OnBadRow = Literal["error", "skip"]


class CorpusFormatError(ValueError):
    """A row of an upstream file does not have the expected format.

    The message always starts with ``<source>:<line>:`` so that a user can open the file
    at the offending line.
    """


class MissingRawDataError(FileNotFoundError):
    """A raw data file the pipeline needs is not where the configuration says it is."""


def decode_text(data: bytes, source: str, encoding: str = "utf-8") -> str:
    """Decode an upstream file, naming the file, line and byte offset of the first invalid byte.

    A leading UTF-8 byte-order mark is dropped (editors on Windows write one); CRLF line ends
    are left to ``str.splitlines``, which every reader here splits with.

    Args:
        data: The file's bytes.
        source: Its name for messages, e.g. ``"archive.tar.gz:1.1/data/en-US.jsonl"``.
        encoding: The codec; ``"utf-8"`` also accepts a BOM.

    Raises:
        CorpusFormatError: ``<source>:<line>: invalid <encoding> at byte offset <n> (<reason>)``.
    """
    codec = "utf-8-sig" if encoding.lower().replace("_", "-") in ("utf-8", "utf8") else encoding
    try:
        return data.decode(codec)
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise CorpusFormatError(
            f"{source}:{line}: invalid {encoding} at byte offset {exc.start} ({exc.reason})"
        ) from None


def missing_raw_data_message(path: str, what: str, url: str) -> str:
    """Build the message for a missing raw file: which file, where, and where to get it.

    Args:
        path: The path that was looked at.
        what: A human name for the data set, e.g. ``"MASSIVE 1.1 tarball"``.
        url: Where a user downloads it.

    Returns:
        A message suitable for :class:`MissingRawDataError`.
    """
    return (
        f"{what} not found at '{path}'. Download it from {url} and place it there, or point the "
        "project at another raw data root (environment variable LANGUAGE_AGNOSTIC_DATA_ROOT, "
        "or `kedro run --params=raw_data_root=/path/to/data`)."
    )


@dataclass
class RejectLog:
    """Collects rejected rows so that none is dropped silently.

    Attributes:
        policy: ``"error"`` raises on the first bad row; ``"skip"`` records it and goes on.
        rows: One dict per rejected row (``source``, ``line``, ``key``, ``reason``, ``content``).
    """

    policy: OnBadRow = "error"
    logger: logging.Logger = field(default_factory=lambda: logging.getLogger(__name__))
    rows: list[dict[str, object]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.policy not in ("error", "skip"):
            raise ValueError(f"on_bad_row must be 'error' or 'skip', got {self.policy!r}")

    def reject(
        self,
        source: str,
        line: int | None,
        kind: str,
        reason: str,
        key: str = "",
        content: str = "",
    ) -> None:
        """Record a bad row, or raise :class:`CorpusFormatError` when the policy is ``error``.

        Args:
            source: The file (or table) the row came from.
            line: 1-based line number in ``source``, if it has lines.
            kind: A short category used for counting, e.g. ``"malformed_json"``.
            reason: The full human-readable reason.
            key: The row's identifier, if it has one.
            content: The offending text (truncated in the log).
        """
        where = f"{source}:{line}" if line is not None else source
        if self.policy == "error":
            raise CorpusFormatError(f"{where}: {reason}")
        self.logger.warning("rejected %s: %s", where, reason)
        self.rows.append(
            {
                "source": source,
                "line": line,
                "key": key,
                "kind": kind,
                "reason": reason,
                "content": content[:300],
            }
        )

    def counts(self) -> dict[str, int]:
        """Number of rejected rows per ``kind``."""
        out: dict[str, int] = {}
        for row in self.rows:
            out[str(row["kind"])] = out.get(str(row["kind"]), 0) + 1
        return out
