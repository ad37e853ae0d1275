"""Readers and parsers for each upstream corpus format. Nothing here knows about Kedro."""
