"""Mainstream search engines: tantivy, bm25s and SQLite FTS5.

They index documents handed to them in memory (:class:`corpus.Document`, the
three fields okfast scores), so only the index build is timed, never reading
the files. They rank by BM25 over whole lower-cased tokens and stop at the
top k, where okfast ranks every match by the exact weighted substring count
of docs/spec.md §3: the comparison is of the cost of answering, not of the
answers. Each is given okfast's field weights where it has fields.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from corpus import Document

from peers.base import Peer

#: okfast's field weights (docs/spec.md §3.3), as boosts.
FIELD_WEIGHTS = {"title": 3.0, "tags_desc": 2.0, "body": 1.0}


class _InMemory(Peer):
    reads_files = False

    def __init__(self) -> None:
        self._docs: Sequence[Document] = ()

    def count(self) -> int:
        return len(self._docs)

    def close(self) -> None:
        self._docs = ()


class Tantivy(_InMemory):
    """tantivy-py: an index in RAM, one text field per okfast field, BM25."""

    name = "tantivy"

    def __init__(self, heap_size: int = 256_000_000, num_threads: int = 2) -> None:
        # 2 indexing threads for a 2-core machine; 128 MB each keeps the number
        # of intermediate segment flushes low for 100k documents.
        import tantivy

        super().__init__()
        self._t = tantivy
        self.heap_size = heap_size
        self.num_threads = num_threads
        self.searcher: Any = None
        self._index: Any = None

    def load(self, root: Path, docs: Sequence[Document]) -> None:
        t = self._t
        sb = t.SchemaBuilder()
        sb.add_text_field("title")
        sb.add_text_field("tags_desc")
        sb.add_text_field("body")
        # The document's position, read back only by ids() (never timed).
        sb.add_unsigned_field("pos", stored=True)
        index = t.Index(sb.build())  # no path: in RAM
        writer = index.writer(heap_size=self.heap_size, num_threads=self.num_threads)
        Doc = t.Document
        for i, d in enumerate(docs):
            writer.add_document(Doc(title=d.title, tags_desc=d.tags_desc, body=d.body, pos=i))
        writer.commit()
        writer.wait_merging_threads()
        index.reload()
        self._index = index
        self.searcher = index.searcher()
        self._docs = docs

    def search(self, query: str, k: int | None) -> Any:
        q = self._index.parse_query(query, list(FIELD_WEIGHTS), field_boosts=FIELD_WEIGHTS)
        # count=False: do not count all matches, tantivy's fastest top-k path.
        return self.searcher.search(
            q, k if k is not None else self.searcher.num_docs, count=False
        ).hits

    def ids(self, result: Any) -> list[str]:
        return [self._docs[self.searcher.doc(addr)["pos"][0]].id for _score, addr in result]

    def close(self) -> None:
        super().close()
        self._index = self.searcher = None


class Bm25s(_InMemory):
    """bm25s (numpy backend): a sparse BM25 index over one field, the three
    fields concatenated (it has no per-field weights)."""

    name = "bm25s"

    def __init__(self) -> None:
        import bm25s

        super().__init__()
        self._b = bm25s
        self.retriever: Any = None

    def load(self, root: Path, docs: Sequence[Document]) -> None:
        b = self._b
        # stopwords=None: the synthetic corpus is made-up words; keep every token.
        tokens = b.tokenize(
            [f"{d.title}\n{d.tags_desc}\n{d.body}" for d in docs],
            stopwords=None,
            show_progress=False,
        )
        retriever = b.BM25()
        retriever.index(tokens, show_progress=False)
        self.retriever = retriever
        self._docs = docs

    def search(self, query: str, k: int | None) -> Any:
        q = self._b.tokenize(query, stopwords=None, return_ids=False, show_progress=False)
        docs, scores = self.retriever.retrieve(
            q, k=k if k is not None else len(self._docs), show_progress=False, n_threads=0
        )
        return docs[0], scores[0]

    def ids(self, result: Any) -> list[str]:
        return [self._docs[int(p)].id for p in result[0]]

    def close(self) -> None:
        super().close()
        self.retriever = None


_FTS5_SELECT = "SELECT rowid FROM c WHERE c MATCH ? ORDER BY bm25(c, {})".format(
    ", ".join(f"{w:.1f}" for w in FIELD_WEIGHTS.values())
)


class SqliteFts5(_InMemory):
    """SQLite FTS5 (the standard library's sqlite3): an in-memory table with the
    three fields, ranked by ``bm25()`` with okfast's field weights. A query is
    its terms OR-ed, each quoted: FTS5 matches whole tokens, not substrings."""

    name = "sqlite-fts5"

    def __init__(self) -> None:
        import sqlite3

        super().__init__()
        self._sqlite3 = sqlite3
        self.db: Any = None

    def load(self, root: Path, docs: Sequence[Document]) -> None:
        db = self._sqlite3.connect(":memory:")
        db.execute("CREATE VIRTUAL TABLE c USING fts5(title, tags_desc, body)")
        db.executemany(
            "INSERT INTO c(rowid, title, tags_desc, body) VALUES (?, ?, ?, ?)",
            ((i, d.title, d.tags_desc, d.body) for i, d in enumerate(docs)),
        )
        db.commit()
        self.db = db
        self._docs = docs

    def search(self, query: str, k: int | None) -> Any:
        terms = " OR ".join('"' + t.replace('"', '""') + '"' for t in query.split())
        sql = _FTS5_SELECT
        if k is not None:
            sql += f" LIMIT {int(k)}"
        return self.db.execute(sql, (terms,)).fetchall()

    def ids(self, result: Any) -> list[str]:
        return [self._docs[int(r[0])].id for r in result]

    def close(self) -> None:
        super().close()
        if self.db is not None:
            self.db.close()
            self.db = None
