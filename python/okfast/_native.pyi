"""Type stub of the Rust extension ``okfast._native`` (checked by mypy.stubtest).

Its exceptions are the classes of ``okfast.errors`` (docs/spec.md §8).
"""

from collections.abc import Callable
from typing import Any, final

import numpy as np
import numpy.typing as npt

__all__ = [
    "Bundle",
    "__version__",
    "fairness_order",
    "fused_order",
    "read_concept",
]

__version__: str

@final
class Bundle:
    """An immutable, loaded and indexed bundle snapshot."""

    @staticmethod
    def load(path: str, progress: Callable[[str, int, int], object] | None = None) -> Bundle: ...
    @staticmethod
    def load_cached(
        path: str, cache_file: str, progress: Callable[[str, int, int], object] | None = None
    ) -> tuple[Bundle, str, str, int, int]: ...
    def refresh(self) -> Bundle | None: ...
    def __len__(self) -> int: ...
    @property
    def made_by(self) -> str: ...
    @property
    def stored_texts(self) -> int: ...
    @property
    def root(self) -> str: ...
    @property
    def okf_version(self) -> str | None: ...
    @property
    def concept_ids(self) -> list[str]: ...
    @property
    def diagnostics(self) -> list[tuple[str, str, str, str]]: ...
    def position(self, concept_id: str) -> int | None: ...
    def concept(self, position: int) -> dict[str, Any]: ...
    def search_arrays(
        self, text: str, *, tag: str | None = None, limit: int | None = None
    ) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.uint32]]: ...
    def search_rows(
        self, text: str, *, tag: str | None = None, limit: int | None = None
    ) -> list[tuple[str, int, str | None, str, str]]: ...
    def excerpt(self, position: int, text: str) -> str: ...
    def ordinal_ranks(self) -> npt.NDArray[np.uint32]: ...
    def stale_after_us(self) -> npt.NDArray[np.int64]: ...
    def passage_row(
        self, position: int, text: str
    ) -> tuple[
        str,
        str | None,
        str,
        str,
        str | None,
        list[str],
        str | None,
        str,
        str,
        int | None,
        str | None,
    ]: ...
    def body(self, position: int) -> str: ...
    def authority_ranks(self) -> npt.NDArray[np.uint8]: ...
    def pinned(
        self, positions: npt.NDArray[np.int32], title_key: str, id_key: str
    ) -> npt.NDArray[np.bool_]: ...
    def governance(self) -> list[tuple[int, list[str], list[str], list[str]]]: ...
    def explain(self, position: int, text: str) -> list[tuple[str, bool, bool, bool]]: ...

def read_concept(
    path: str, data: bytes
) -> tuple[dict[str, Any] | None, list[tuple[str, str, str, str]]]: ...
def fused_order(
    strategy: str,
    score: npt.NDArray[np.uint32],
    priority: npt.NDArray[np.int32],
    source_rank: npt.NDArray[np.uint32],
    concept_rank: npt.NDArray[np.uint32],
    source_list_rank: npt.NDArray[np.uint32],
    fairness_quota: int | None = None,
) -> npt.NDArray[np.uint32]: ...
def fairness_order(sources: npt.NDArray[np.uint32], quota: int) -> npt.NDArray[np.uint32]: ...
