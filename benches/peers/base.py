"""The one interface every measured system implements."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

from corpus import Document


class Process(NamedTuple):
    """How to start a Python process that can load a peer."""

    argv: list[str]
    cwd: Path | None = None
    #: The environment, or None for the caller's.
    env: dict[str, str] | None = None


class Peer:
    """One system under test.

    The measuring code (``benches/report.py --child`` and the pytest-benchmark
    files) calls, in this order: ``prime`` once, untimed; then for each round
    ``before_load`` (untimed) and ``load`` (timed); then ``search`` (timed),
    once per query. ``ids``, ``count`` and ``info`` read the result back and
    are never timed; ``close`` drops what ``load`` built, so that two rounds
    never hold two copies at once.
    """

    #: The name in result tables, in ``report.json`` and on the command line.
    name: ClassVar[str] = ""
    #: True: ``load`` reads the bundle's files. False: it indexes the documents
    #: handed to it, and reading the files is not charged to it.
    reads_files: ClassVar[bool] = True
    #: False when the system has no top-k search: a top-10 query costs the full
    #: scan, so the report times the full list once and shows it for both.
    has_top_k: ClassVar[bool] = True
    #: Whether one untimed query runs before the timed ones. The OKF libraries
    #: and the reference are measured as a caller meets them, first query
    #: included.
    warm_up: ClassVar[bool] = True

    @classmethod
    def process(cls) -> Process:
        """The interpreter the reporter starts to measure this peer in."""
        return Process([sys.executable])

    def prime(self, root: Path) -> None:
        """Prepare what every load of ``root`` expects to find (untimed, once)."""

    def before_load(self, root: Path) -> None:
        """Untimed preparation before each timed ``load``."""

    def load(self, root: Path, docs: Sequence[Document]) -> None:
        """Make the corpus searchable: from the files under ``root``, or from
        ``docs`` when ``reads_files`` is False."""
        raise NotImplementedError

    def search(self, query: str, k: int | None) -> Any:
        """The top ``k`` (``None``: every match) in the system's own form, with
        as little post-processing as the system allows."""
        raise NotImplementedError

    def ids(self, result: Any) -> list[str]:
        """The concept ids of a ``search`` result, in its order."""
        raise NotImplementedError

    def count(self) -> int:
        """How many documents the loaded system holds."""
        raise NotImplementedError

    def info(self) -> dict[str, Any]:
        """What else is worth keeping about the loaded system in the raw data."""
        return {}

    def close(self) -> None:
        """Drop what ``load`` built."""
