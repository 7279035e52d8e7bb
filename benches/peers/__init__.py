"""Every system the benchmarks measure, behind one interface (:class:`Peer`).

One module per family:

- ``peers.okfast``: okfast (a default load, ``cache=False``, a warm reopen)
  and its pure-Python reference;
- ``peers.engines``: tantivy, bm25s and SQLite FTS5, indexing documents
  handed to them in memory;
- ``peers.okf_libs``: the OKF libraries from PyPI, each in its own virtual
  environment.

Importing this package imports no system: each peer imports its library when
it is made, so the package also loads inside an OKF library's venv.
"""

from __future__ import annotations

from peers.base import Peer, Process
from peers.engines import Bm25s, SqliteFts5, Tantivy
from peers.okf_libs import LIBRARIES
from peers.okfast import Okfast, OkfastBm25f, OkfastNoCache, OkfastWarm, Reference

__all__ = ["ENGINES", "OKF_LIBRARIES", "SYSTEMS", "Peer", "Process", "make"]

_ALL: tuple[type[Peer], ...] = (
    Okfast,
    OkfastNoCache,
    OkfastWarm,
    OkfastBm25f,
    Tantivy,
    Bm25s,
    SqliteFts5,
    Reference,
    *LIBRARIES.values(),
)
#: Every system by name, in the order the reports list them.
SYSTEMS: dict[str, type[Peer]] = {cls.name: cls for cls in _ALL}
ENGINES = (Tantivy.name, Bm25s.name, SqliteFts5.name)
OKF_LIBRARIES = tuple(LIBRARIES)


def make(name: str) -> Peer:
    """A new peer; ``ImportError`` when its library is not installed."""
    return SYSTEMS[name]()
