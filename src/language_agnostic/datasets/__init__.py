"""Kedro datasets for upstream formats that kedro-datasets does not read (archives in place)."""

from language_agnostic.datasets.archive import ArchiveMembers, TarArchiveDataset, ZipArchiveDataset

__all__ = ["ArchiveMembers", "TarArchiveDataset", "ZipArchiveDataset"]
