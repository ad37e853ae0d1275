"""Kedro datasets for upstream formats that kedro-datasets does not read (archives in place)."""

from language_agnostic.datasets.archive import ArchiveMembers, TarArchiveDataset

__all__ = ["ArchiveMembers", "TarArchiveDataset"]
