"""``OkfastRetriever``: a catalog as a LangChain retriever (``okfast[langchain]``).

Each document is one resolved passage, in the resolver's order::

    Document(page_content=<the concept's body>,
             metadata=<the passage's fields, as okfast.integrations.records.PassageRecord,
                       plus surface="knowledge" or "memory">,
             id="<source_id>:<concept_id>")

With a ``scope``, the query carries it (the resolver's visibility rule sees
it) and up to ``k`` of that scope's memory passages follow the knowledge ones.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import stat
import threading
import warnings
import weakref
from collections.abc import Mapping
from typing import Any

try:
    from langchain_core.callbacks import (
        AsyncCallbackManagerForRetrieverRun,
        CallbackManagerForRetrieverRun,
    )
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever
    from pydantic import ConfigDict, Field, InstanceOf, PrivateAttr
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError(
        "okfast.integrations.langchain needs langchain-core (Python 3.11 or later): "
        "pip install 'okfast[langchain]'"
    ) from e

from okfast import strict_json
from okfast.arguments import batch_of
from okfast.cache import default_cache_dir
from okfast.catalog import Catalog
from okfast.errors import InvalidArgumentError, InvalidArgumentTypeError
from okfast.integrations.records import passage_record
from okfast.integrations.searching import log_errors, make_query, open_resolver, ranked
from okfast.memory.scope import Scope
from okfast.memory.store import FileMemoryStore
from okfast.model import Passage
from okfast.query import Strategy
from okfast.resolver import Resolver
from okfast.scoring import Scorer, count_of
from okfast.settings import Settings, settings_for

#: The options okfast adds to a LangChain retriever's (``name``, ``tags``,
#: ``metadata``), named when an unknown one is refused.
_OPTIONS = ("catalog", "resolver", "k", "strategy", "tag", "scope", "scorer", "settings")


def _document(p: Passage, surface: str) -> Document:
    metadata: dict[str, Any] = dict(passage_record(p))
    metadata["surface"] = surface
    return Document(page_content=p.body, metadata=metadata, id=f"{p.source_id}:{p.concept_id}")


class OkfastRetriever(BaseRetriever):
    """Resolves a query over an okfast catalog.

    Build it from ``catalog=`` (a :class:`okfast.Catalog` or the path of a
    ``catalog.json``, loaded once) or from a ready ``resolver=``. ``k`` (also
    per call: ``retriever.invoke(q, k=3)``) caps the knowledge documents;
    ``strategy``, ``scorer`` and ``tag`` are passed to every query;
    ``settings`` (with ``catalog``) are the resolver's (docs/spec.md §13);
    ``scope`` adds that scope's memory, scored as the knowledge is.

    A bad option (``k``, ``strategy``, ``scorer``, ``tag``) or an unknown
    one raises :class:`okfast.InvalidArgumentError` (a ``ValueError``) here,
    not at the first search; an option of the wrong type
    :class:`okfast.InvalidArgumentTypeError` (a ``TypeError``); a bad catalog
    or settings file okfast's own :class:`okfast.CatalogError` (with its
    ``diagnostics``) or :class:`okfast.errors.SettingsError` (``ValueError``).
    With a ``scope``, ``tag`` filters the memory documents too; errors of the
    memory read are logged as the resolver's are.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    # InstanceOf: pydantic would otherwise build a Catalog from a dict, unchecked.
    catalog: InstanceOf[Catalog] | str | os.PathLike[str] | None = None
    """A :class:`okfast.Catalog` or the path of a ``catalog.json`` (or give ``resolver``)."""
    # Any: a Resolver or a RayResolver (its class is not imported without
    # Ray); open_resolver checks what was given (docs/integrations.md).
    resolver: Any = None
    """A ready :class:`okfast.Resolver` or ``okfast.distributed.RayResolver``."""
    k: int = Field(default=4, ge=1)
    """How many knowledge documents to return."""
    strategy: Strategy | None = None
    tag: str | None = None
    scope: InstanceOf[Scope] | None = None
    """Whose memory to add after the knowledge (none without a scope)."""
    scorer: Scorer | None = None
    """The scorer of every query (default: the resolver's)."""
    settings: InstanceOf[Settings] | str | os.PathLike[str] | None = None
    """A settings file or :class:`okfast.settings.Settings` (with ``catalog``)."""

    _resolver: Resolver = PrivateAttr()  # or a RayResolver, which has its reads
    _store: FileMemoryStore | None = PrivateAttr(default=None)

    def __init__(self, **data: Any) -> None:
        # Pydantic turns every ValueError raised while it validates into its
        # ValidationError, which would hide okfast's own class and a
        # CatalogError's diagnostics (docs/spec.md §8), and it drops a keyword
        # it does not know. So okfast checks every option and opens the
        # resolver itself before pydantic sees them: what reaches pydantic is
        # already of the right type.
        unknown = sorted(set(data) - set(type(self).model_fields))
        if unknown:
            raise InvalidArgumentError(
                f"OkfastRetriever got unknown option(s) {', '.join(unknown)}; "
                f"it takes {', '.join(_OPTIONS)} (and LangChain's name, tags, metadata)"
            )
        k = count_of("k", data.get("k", type(self).model_fields["k"].default))
        # The options every query carries, checked by making such a query
        # (docs/spec.md §5.1): a bad one fails here, not at the first search.
        make_query(
            "okfast",
            limit=k,
            strategy=data.get("strategy"),
            tag=data.get("tag"),
            scope=data.get("scope"),
            scorer=data.get("scorer"),
        )
        catalog = data.get("catalog")
        if catalog is not None and not isinstance(catalog, Catalog | str | os.PathLike):
            raise InvalidArgumentTypeError(
                f"catalog= must be a Catalog or a catalog.json path, got {type(catalog).__name__}"
            )
        resolver = _opened(
            catalog, data.get("resolver"), data.get("strategy"), data.get("settings")
        )
        super().__init__(**data)
        self._resolver = resolver
        if self.scope is not None:
            self._store = FileMemoryStore.from_catalog(self._resolver.catalog)

    @classmethod
    def model_validate(cls, obj: Any, *args: Any, **kwargs: Any) -> OkfastRetriever:
        # pydantic's way of making a model from a mapping skips __init__, so
        # its checks and the resolver's opening: a mapping goes through it
        # (the same errors, never a ValidationError; docs/integrations.md).
        if isinstance(obj, cls):
            return obj
        if not isinstance(obj, Mapping):
            raise InvalidArgumentTypeError(
                f"OkfastRetriever.model_validate takes a mapping of options, "
                f"got {type(obj).__name__}"
            )
        return cls(**obj)

    @classmethod
    def model_validate_json(
        cls, json_data: str | bytes | bytearray, *args: Any, **kwargs: Any
    ) -> OkfastRetriever:
        # pydantic's JSON path skips __init__ too, and wrapped okfast's error
        # in its ValidationError: the object read goes through model_validate.
        try:
            text = json_data.decode() if isinstance(json_data, bytes | bytearray) else json_data
            obj = strict_json.loads(text)
        except (TypeError, ValueError) as e:
            raise InvalidArgumentError(f"OkfastRetriever.model_validate_json: {e}") from None
        return cls.model_validate(obj)

    @classmethod
    def model_construct(cls, _fields_set: set[str] | None = None, **values: Any) -> OkfastRetriever:
        # pydantic's model_construct skips __init__ too, leaving no resolver
        # (an AttributeError at the first query) and nothing checked: the
        # options make the retriever as the constructor does.
        return cls(**values)

    def model_copy(
        self, *, update: Mapping[str, Any] | None = None, deep: bool = False
    ) -> OkfastRetriever:
        # pydantic sets an update's values unchecked and keeps the resolver
        # and memory store opened from the old options (a copy with k=0
        # returned nothing, one with another catalog or scope silently used
        # the old one): a copy with other options is made as the constructor
        # makes one, from the options given when this one was made
        # (docs/integrations.md). LangChain's own fields are copied as
        # pydantic copies them.
        if update is not None and not isinstance(update, Mapping):
            raise InvalidArgumentTypeError(f"update must be a mapping, got {type(update).__name__}")
        if update is None or set(update) <= set(BaseRetriever.model_fields):
            return super().model_copy(update=update, deep=deep)
        options = {name: getattr(self, name) for name in self.model_fields_set}
        return type(self)(**{**options, **update})

    def copy(
        self,
        *,
        include: Any = None,
        exclude: Any = None,
        update: Mapping[str, Any] | None = None,
        deep: bool = False,
    ) -> OkfastRetriever:
        # pydantic's deprecated copy set an update's options unchecked, as
        # model_copy did before it was made to check them: the same path,
        # deprecated as pydantic's is.
        warnings.warn(
            "OkfastRetriever.copy is deprecated as pydantic's is; use model_copy",
            DeprecationWarning,
            stacklevel=2,
        )
        if include is None and exclude is None:
            return self.model_copy(update=update, deep=deep)
        if update:
            raise InvalidArgumentError("copy(include=, exclude=) takes no update; use model_copy")
        return super().copy(include=include, exclude=exclude, deep=deep)

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> OkfastRetriever:
        # The resolver (a lock, open bundles, mapped cache files) and the
        # memory store are shared by the copy as a connection is, with what
        # they were opened from; the rest is copied deeply as pydantic copies
        # it (docs/integrations.md). copy.deepcopy failed on the lock before.
        memo = {} if memo is None else memo
        for shared in (self._resolver, self._store, self.catalog, self.resolver, self.settings):
            if shared is not None:
                memo[id(shared)] = shared
        return super().__deepcopy__(memo)

    def __setattr__(self, name: str, value: Any) -> None:
        # The resolver (and the memory store) are opened from the options
        # when the retriever is made: one changed afterwards would not be
        # used, or not checked, so changing one is refused.
        if name in _OPTIONS:
            raise InvalidArgumentError(
                f"OkfastRetriever.{name} is fixed when the retriever is made; make a new one"
            )
        super().__setattr__(name, value)

    def _k(self, k: Any) -> int:
        return self.k if k is None else count_of("k", k)

    def _documents(self, query: str, k: int | None) -> list[Document]:
        n = self._k(k)
        q = make_query(
            query,
            limit=n,
            strategy=self.strategy,
            tag=self.tag,
            scope=self.scope,
            scorer=self.scorer,
        )
        found = ranked(self._resolver, q)
        docs = [_document(p, "knowledge") for p in found]
        if self._store is not None and self.scope is not None:
            # Memory is scored as knowledge is (docs/spec.md §6).
            r = self._resolver
            how = self.scorer or r.default_scorer
            read = self._store.read(
                self.scope, query, limit=n, scorer=how, bm25f=r.default_bm25f, tag=self.tag
            )
            log_errors(read.diagnostics)
            docs.extend(_document(p, "memory") for p in read.passages[:n])
        return docs

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        k: int | None = None,
        **unknown: Any,
    ) -> list[Document]:
        _refuse_call_keywords(unknown)
        return self._documents(query, k)

    def batch(self, inputs: list[str], *args: Any, **kwargs: Any) -> list[list[Document]]:
        # Runnable.batch searched a string one letter at a time and failed
        # on a generator deep in LangChain: a batch is a sequence of queries,
        # as every okfast batch is (docs/spec.md §5.2).
        return super().batch(list(batch_of("inputs", inputs, (str,))), *args, **kwargs)

    async def abatch(self, inputs: list[str], *args: Any, **kwargs: Any) -> list[list[Document]]:
        return await super().abatch(list(batch_of("inputs", inputs, (str,))), *args, **kwargs)

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        k: int | None = None,
        **unknown: Any,
    ) -> list[Document]:
        _refuse_call_keywords(unknown)
        # The native search releases the GIL: a worker thread keeps the event
        # loop free while it runs.
        return await asyncio.to_thread(self._documents, query, k)


class _Same:
    """A key part equal only to the very object it holds (and keeps alive, so
    its ``id`` is not another object's while the key exists)."""

    __slots__ = ("obj",)

    def __init__(self, obj: object) -> None:
        self.obj = obj

    def __hash__(self) -> int:
        return id(self.obj)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Same) and other.obj is self.obj


#: The resolvers retrievers opened from a catalog, while one of them is alive:
#: LangChain's ``configurable_fields`` makes a retriever per call from the
#: first one's options, which would otherwise load the catalog on every call.
_OPENED: weakref.WeakValueDictionary[tuple[object, ...], Resolver] = weakref.WeakValueDictionary()
_OPENED_LOCK = threading.Lock()


def _file_key(path: str | os.PathLike[str]) -> tuple[object, ...] | None:
    """A file as it is now: its absolute path and, for a regular file, the
    digest of its bytes. Not its size and time: a file rewritten with as many
    bytes within one tick of the file system's clock keeps both
    (docs/integrations.md). Anything else (a FIFO, read once) by what its
    status says."""
    try:
        p = os.path.abspath(os.fspath(path))
        st = os.stat(p)
        if not stat.S_ISREG(st.st_mode):
            return (p, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        with open(p, "rb") as f:
            digest = hashlib.file_digest(f, "sha256").digest()
    except (OSError, TypeError, ValueError):
        return None
    return (p, digest)


def _opened(catalog: Any, resolver: Any, strategy: Any, settings: Any) -> Resolver:
    """The resolver a retriever searches (docs/integrations.md): the one
    given, or one over ``catalog`` — shared with every live retriever made
    from the same catalog (the same object, or the same file holding the
    same bytes), strategy and settings (the same object, or the same bytes)."""
    key: tuple[object, ...] | None = None
    if resolver is None and catalog is not None:
        cat = _Same(catalog) if isinstance(catalog, Catalog) else _file_key(catalog)
        how = _Same(settings) if isinstance(settings, Settings) else settings
        if how is not None and not isinstance(how, _Same):
            how = _file_key(how)
        if cat is not None and (settings is None or how is not None):
            # The cache directory is chosen from the environment at each
            # bundle load: a retriever made under another one opens its own.
            key = (cat, how, strategy, default_cache_dir())
    found = None
    if key is not None:
        with _OPENED_LOCK:
            found = _OPENED.get(key)
        if found is not None and (settings is not None or _same_named_settings(found)):
            return found
    opened = open_resolver(catalog, resolver, strategy=strategy, settings=settings)
    if key is not None:
        with _OPENED_LOCK:
            # Another thread's, opened meanwhile, is shared; one whose
            # settings went out of date (``found``) is replaced.
            current = _OPENED.get(key)
            if current is None or current is found:
                _OPENED[key] = opened
            else:
                opened = current
    return opened


def _same_named_settings(resolver: Resolver) -> bool:
    """Whether the settings file its catalog names (read again now, a small
    file) still gives ``resolver`` its settings: ``okfast tune --apply``
    rewrites that file while retrievers are alive (docs/integrations.md)."""
    now = settings_for(resolver.catalog, None)
    return now == (resolver.settings, resolver.settings_diagnostics)


def _refuse_call_keywords(unknown: Mapping[str, Any]) -> None:
    """A keyword LangChain passes on from ``invoke`` that a call does not
    take is refused as okfast's error, which is also the ``TypeError``
    Python raises for an unexpected keyword (docs/integrations.md)."""
    if unknown:
        name = sorted(unknown)[0]
        raise InvalidArgumentTypeError(
            f"OkfastRetriever: unknown keyword argument {name!r} for a call (it takes k)"
        )
