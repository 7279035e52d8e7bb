"""catalog.json (SPEC §4): every diagnostic code, path resolution, reload."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import pytest
from okfast.catalog import Catalog, CatalogError


def write(tmp: Path, doc: Any, name: str = "catalog.json") -> Path:
    p = tmp / name
    p.write_text(doc if isinstance(doc, str) else json.dumps(doc), encoding="utf-8")
    return p


def codes_of(tmp: Path, doc: Any, **kw: Any) -> list[str]:
    with pytest.raises(CatalogError) as e:
        Catalog.load(write(tmp, doc), **kw)
    assert isinstance(e.value, ValueError)
    assert str(e.value).splitlines() == [f"[{d.code}] {d.message}" for d in e.value.diagnostics]
    return [d.code for d in e.value.diagnostics]


@pytest.fixture
def tmp(tmp_path: Path) -> Path:
    for d in ["docs", "more", "mem/user"]:
        (tmp_path / d).mkdir(parents=True)
    return tmp_path


def src(**kw: Any) -> dict[str, Any]:
    return {"id": "docs", "path": "./docs", **kw}


def MEM(path: str, **kw: Any) -> dict[str, Any]:  # noqa: N802  (reads as a constant in tables)
    return {"id": "m", "path": path, "role": "memory", "tier": "user", **kw}


def MEM2(path: str) -> dict[str, Any]:  # noqa: N802
    return {"id": "m2", "path": path, "role": "memory", "tier": "tenant"}


def test_a_disabled_source_overlaps_nothing(tmp: Path) -> None:
    """docs/spec.md §4.2: only enabled sources are walked or read, so a
    disabled one may share a directory with any other."""
    doc = {"version": 1, "sources": [src(path="mem", enabled=False), MEM("mem/user")]}
    assert [s.id for s in Catalog.load(write(tmp, doc)).sources] == ["docs", "m"]


def test_a_disabled_memory_source_serves_no_tier(tmp: Path) -> None:
    """docs/spec.md §4.1: only enabled sources serve a tier, so a tier's
    source may be switched off beside the one that replaces it, in either
    order; the store reads the enabled one."""
    from okfast import FileMemoryStore, Tier

    (tmp / "mem" / "old").mkdir()
    old = {"id": "old", "path": "mem/old", "role": "memory", "tier": "user", "enabled": False}
    for sources in ([old, MEM("mem/user")], [MEM("mem/user"), old]):
        cat = Catalog.load(write(tmp, {"version": 1, "sources": sources}))
        assert sorted(s.id for s in cat.sources) == ["m", "old"]
        assert FileMemoryStore.from_catalog(cat).roots == {Tier.USER: tmp / "mem" / "user"}
    both = [{**old, "enabled": True}, MEM("mem/user")]
    assert codes_of(tmp, {"version": 1, "sources": both}) == ["DuplicateMemoryTier"]


def test_good_catalog(tmp: Path) -> None:
    cat = Catalog.load(
        write(
            tmp,
            {
                "version": 1,
                "sources": [
                    src(priority=7, authority="canonical"),
                    {"id": "more", "path": "more", "enabled": False},
                    {"id": "user-mem", "path": "./mem/user", "role": "memory", "tier": "user"},
                ],
            },
        )
    )
    assert [s.id for s in cat.sources] == ["docs", "more", "user-mem"]
    docs, more, mem = cat.sources
    assert (docs.priority, docs.enabled, docs.role, docs.authority) == (
        7,
        True,
        "knowledge",
        "canonical",
    )
    assert docs.directory == tmp / "docs"
    assert more.enabled is False and more.directory is None
    assert (mem.role, mem.tier, mem.directory) == ("memory", "user", tmp / "mem" / "user")
    assert cat.generation == 1


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        ("{", ["ParseError"]),
        ("[]", ["ParseError"]),
        ('{"version": 1, "sources": [NaN]}', ["ParseError"]),
        ('{"version": 1, "version": 1, "sources": []}', ["ParseError"]),
        ({"version": 1, "sources": [3]}, ["ParseError"]),
        ({"version": 1, "sources": [src(id="a\x00")]}, ["EmbeddedNul", "InvalidSourceId"]),
        ({"version": 1, "sources": [src()], "extra": 1}, ["UnknownRootProperty"]),
        ({"version": 2, "sources": [src()]}, ["WrongVersion"]),
        ({"version": 1.0, "sources": [src()]}, ["WrongVersion"]),
        ({"version": True, "sources": [src()]}, ["WrongVersion"]),
        ({"version": 1}, ["EmptySources"]),
        ({"version": 1, "sources": []}, ["EmptySources"]),
        ({"version": 1, "sources": {}}, ["EmptySources"]),
        ({"version": 1, "sources": [src(colour="red")]}, ["UnknownSourceProperty"]),
        ({"version": 1, "sources": [src(id="../x")]}, ["InvalidSourceId"]),
        ({"version": 1, "sources": [src(id=".hidden")]}, ["InvalidSourceId"]),
        ({"version": 1, "sources": [src(id="x" * 256)]}, ["InvalidSourceId"]),
        ({"version": 1, "sources": [src(id=5)]}, ["InvalidSourceId"]),
        ({"version": 1, "sources": [src(), src(path="more")]}, ["DuplicateSourceId"]),
        ({"version": 1, "sources": [src(path="")]}, ["EmptyPath"]),
        # Blank as a query is (docs/spec.md §4.2, §5.1): str.isspace's set.
        ({"version": 1, "sources": [src(path=" \u001c\u3000")]}, ["EmptyPath"]),
        ({"version": 1, "sources": [{"id": "docs"}]}, ["EmptyPath"]),
        ({"version": 1, "sources": [src(priority=1.5)]}, ["MalformedPriority"]),
        ({"version": 1, "sources": [src(priority=2**31)]}, ["MalformedPriority"]),
        ({"version": 1, "sources": [src(priority="1")]}, ["MalformedPriority"]),
        ({"version": 1, "sources": [src(enabled="yes")]}, ["MalformedEnabled"]),
        ({"version": 1, "sources": [src(role="wiki")]}, ["IllegalRole"]),
        ({"version": 1, "sources": [src(role="memory")]}, ["IllegalTier"]),
        ({"version": 1, "sources": [src(tier="user")]}, ["IllegalTier"]),
        (
            {
                "version": 1,
                "sources": [
                    {"id": "a", "path": "mem/user", "role": "memory", "tier": "user"},
                    {"id": "b", "path": "mem/user", "role": "memory", "tier": "user"},
                ],
            },
            ["DuplicateMemoryTier"],
        ),
        ({"version": 1, "sources": [src(authority="gospel")]}, ["IllegalAuthority"]),
        # Memory and knowledge directories must not overlap, either way round.
        ({"version": 1, "sources": [src(), MEM("docs")]}, ["MemoryOverlapsKnowledge"]),
        (
            {"version": 1, "sources": [src(path="mem"), MEM("mem/user")]},
            ["MemoryOverlapsKnowledge"],
        ),
        (
            {"version": 1, "sources": [MEM("mem"), src(path="mem/user")]},
            ["MemoryOverlapsKnowledge"],
        ),
        (
            {"version": 1, "sources": [src(path="mem"), MEM("mem/user"), MEM2("mem")]},
            ["MemoryOverlapsKnowledge", "MemoryOverlapsKnowledge"],
        ),
        ({"version": 1, "sources": [src(path="/etc")]}, ["AbsolutePath"]),
        ({"version": 1, "sources": [src(path="C:\\x")]}, ["AbsolutePath"]),
        ({"version": 1, "sources": [src(path="\\\\host\\x")]}, ["AbsolutePath"]),
        ({"version": 1, "sources": [src(path="../outside")]}, ["OutsideRoot"]),
        ({"version": 1, "sources": [src(path="nope")]}, ["TargetNotFound"]),
        ({"version": 1, "sources": [src(path="~/x")]}, ["TargetNotFound"]),
    ],
)
def test_each_code(tmp: Path, doc: Any, expected: list[str]) -> None:
    assert codes_of(tmp, doc) == expected


def test_every_problem_in_one_pass(tmp: Path) -> None:
    doc = {
        "version": 3,
        "x": 1,
        "sources": [
            src(priority="high", enabled=1),
            src(),
            {"id": "m", "path": "more", "role": "memory"},
        ],
    }
    assert codes_of(tmp, doc) == [
        "UnknownRootProperty",
        "WrongVersion",
        "MalformedPriority",
        "MalformedEnabled",
        "DuplicateSourceId",
        "IllegalTier",
    ]


def test_disabled_sources_are_not_resolved(tmp: Path) -> None:
    cat = Catalog.load(write(tmp, {"version": 1, "sources": [src(path="/abs", enabled=False)]}))
    assert cat.sources[0].directory is None


@pytest.mark.parametrize("path", [None, "", "  "])
def test_a_disabled_source_may_leave_its_path_out(tmp: Path, path: str | None) -> None:
    off = {"id": "off", "enabled": False} | ({} if path is None else {"path": path})
    cat = Catalog.load(write(tmp, {"version": 1, "sources": [src(), off]}))
    assert [(s.id, s.enabled, s.directory) for s in cat.sources] == [
        ("docs", True, tmp / "docs"),
        ("off", False, None),
    ]
    # Enabled, the same entry needs its path; of the wrong type it is wrong either way.
    assert codes_of(tmp, {"version": 1, "sources": [off | {"enabled": True}]}) == ["EmptyPath"]
    assert codes_of(tmp, {"version": 1, "sources": [off | {"path": 7}]}) == ["EmptyPath"]


def test_an_integer_too_long_to_convert_is_a_wrong_value_not_a_parse_error(tmp: Path) -> None:
    # Valid JSON of more digits than Python converts (4,300 by default).
    text = '{"version": 1, "sources": [{"id": "docs", "path": "./docs", "priority": %s}]}'
    with pytest.raises(CatalogError) as e:
        Catalog.load(write(tmp, text % ("9" * 5000)))
    assert [str(d) for d in e.value.diagnostics] == [
        "[MalformedPriority] sources[0]: priority must be a 32-bit integer, "
        "got <an integer of 5000 digits>"
    ]
    assert codes_of(
        tmp, '{"version": %s, "sources": [{"id": "docs", "path": "./docs"}]}' % ("-" + "1" * 4301)
    ) == ["WrongVersion"]


def test_symlink_in_path_is_refused_but_root_may_be_one(tmp: Path) -> None:
    os.symlink(tmp / "docs", tmp / "link")
    assert codes_of(tmp, {"version": 1, "sources": [src(path="link")]}) == ["ReparsePointInPath"]
    (tmp / "real" / "b").mkdir(parents=True)
    os.symlink(tmp / "real", tmp / "via")
    assert codes_of(tmp, {"version": 1, "sources": [src(path="via/b")]}) == ["ReparsePointInPath"]
    # The catalog root itself may be a link.
    write(tmp, {"version": 1, "sources": [src()]})
    os.symlink(tmp, tmp.parent / (tmp.name + "-alias"))
    alias = tmp.parent / (tmp.name + "-alias")
    cat = Catalog.load(alias / "catalog.json")
    assert cat.sources[0].directory == alias / "docs"


def test_explicit_root(tmp: Path) -> None:
    (tmp / "sub").mkdir()
    doc = {"version": 1, "sources": [src(path="../docs")]}
    p = write(tmp / "sub", doc)
    with pytest.raises(CatalogError):
        Catalog.load(p)
    assert Catalog.load(p, root=tmp).sources[0].directory == tmp / "docs"


def test_bom_and_parse(tmp: Path) -> None:
    text = "\ufeff" + json.dumps({"version": 1, "sources": [src()]})
    assert Catalog.parse(text, base_dir=tmp).sources[0].id == "docs"
    with pytest.raises(CatalogError):
        Catalog.parse("{}", base_dir=tmp)


def test_unreadable_or_not_utf8(tmp: Path) -> None:
    with pytest.raises(CatalogError) as e:
        Catalog.load(tmp / "missing.json")
    assert [d.code for d in e.value.diagnostics] == ["ParseError"]
    (tmp / "bad.json").write_bytes(b"\xff\xfe{}")
    with pytest.raises(CatalogError):
        Catalog.load(tmp / "bad.json")


def test_reload_keeps_last_good(tmp: Path) -> None:
    p = write(tmp, {"version": 1, "sources": [src()]})
    cat = Catalog.load(p)
    write(tmp, {"version": 1, "sources": [src(), {"id": "more", "path": "more"}]})
    r = cat.reload()
    assert r.ok and r.generation == 2 and cat.generation == 2
    assert [s.id for s in cat.sources] == ["docs", "more"]
    write(tmp, "{ broken")
    r = cat.reload()
    assert not r.ok and r.generation == 2 and [d.code for d in r.diagnostics] == ["ParseError"]
    assert [s.id for s in cat.sources] == ["docs", "more"]


def test_a_source_is_found_by_id_in_the_sources_of_now(tmp: Path) -> None:
    p = write(tmp, {"version": 1, "sources": [src()]})
    cat = Catalog.load(p)
    docs = cat.source("docs")
    assert docs is not None and cat.source("more") is None
    write(tmp, {"version": 1, "sources": [src(), {"id": "more", "path": "more"}]})
    assert cat.reload().ok
    more = cat.source("more")
    assert more is not None and more.directory == (tmp / "more").resolve()
    # Sources set by hand (a catalog is a plain dataclass): the first of an id.
    other = dataclasses.replace(docs, path="elsewhere")
    cat.sources = (other, docs)
    assert cat.source("docs") is other and cat.source("more") is None


def test_a_reload_resolves_against_the_root_resolved_at_load(
    tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A relative root names the directory it named when loaded, after a
    chdir too, as the catalog's own path does."""
    (tmp / "conf").mkdir()
    p = tmp / "conf" / "catalog.json"
    p.write_text(json.dumps({"version": 1, "sources": [{"id": "docs", "path": "../docs"}]}))
    monkeypatch.chdir(tmp)
    cat = Catalog.load(p, root=".")
    monkeypatch.chdir(tmp / "more")
    r = cat.reload()
    assert r.ok, r.diagnostics
    assert cat.sources[0].directory == tmp / "docs" and cat.root == Path(".")


def test_reloads_take_turns_so_the_newest_file_is_installed_last(
    tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/spec.md §4.3: a reload that read the older file cannot install
    it after one that read the newer."""
    import threading
    import time

    import okfast.catalog as catalog_module

    p = write(tmp, {"version": 1, "sources": [src()]})
    cat = Catalog.load(p)
    real = catalog_module._read_and_parse
    read_old, go_on = threading.Event(), threading.Event()

    def slow_first(*args: Any) -> Any:
        out = real(*args)
        if not read_old.is_set():
            read_old.set()
            assert go_on.wait(30)
        return out

    monkeypatch.setattr(catalog_module, "_read_and_parse", slow_first)
    first = threading.Thread(target=cat.reload)
    first.start()
    assert read_old.wait(30)
    write(tmp, {"version": 1, "sources": [src(), {"id": "more", "path": "more"}]})
    second = threading.Thread(target=cat.reload)
    second.start()
    time.sleep(0.3)
    assert second.is_alive()  # waits for the first reload to install
    go_on.set()
    first.join(30)
    second.join(30)
    assert cat.generation == 3 and [s.id for s in cat.sources] == ["docs", "more"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_catalog_read_from_a_fifo_is_not_reloaded(tmp: Path) -> None:
    """docs/spec.md §4.3: `--catalog <(...)` reads once; a reload would wait
    for a writer that never comes."""
    import threading

    fifo = tmp / "catalog.json"
    os.mkfifo(fifo)
    text = json.dumps({"version": 1, "sources": [src()]})
    writer = threading.Thread(target=lambda: fifo.write_text(text))
    writer.start()
    cat = Catalog.load(fifo)
    writer.join(30)
    r = cat.reload()
    assert not r.ok and r.generation == 1
    assert [d.message for d in r.diagnostics] == [
        f"catalog {fifo} is not a regular file; nothing to reload"
    ]


def test_a_settings_path_naming_the_catalog_itself_is_malformed(tmp: Path) -> None:
    # docs/spec.md §4.1: `tune --apply` would write settings over the catalog.
    for spelled in ("catalog.json", "./catalog.json", "docs/../catalog.json"):
        p = write(tmp, {"version": 1, "sources": [src()], "settings": spelled})
        with pytest.raises(CatalogError) as e:
            Catalog.load(p)
        assert [d.code for d in e.value.diagnostics] == ["MalformedSettings"]
        assert "names the catalog file itself" in e.value.diagnostics[0].message


def test_a_settings_path_that_is_another_name_of_the_catalog_is_malformed(tmp: Path) -> None:
    # docs/spec.md §4.1: the same file by a symbolic or a hard link.
    p = write(tmp, {"version": 1, "sources": [src()], "settings": "alias.json"})
    for make in (os.symlink, os.link):
        (tmp / "alias.json").unlink(missing_ok=True)
        make(p, tmp / "alias.json")
        with pytest.raises(CatalogError) as e:
            Catalog.load(p)
        assert [d.code for d in e.value.diagnostics] == ["MalformedSettings"]
        assert "names the catalog file itself" in e.value.diagnostics[0].message
    (tmp / "alias.json").unlink()
    (tmp / "alias.json").write_text("{}")
    assert Catalog.load(p).settings_path == tmp / "alias.json"


def test_the_digest_is_of_the_bytes_parsed(tmp: Path) -> None:
    import hashlib

    p = write(tmp, {"version": 1, "sources": [src()]})
    first = p.read_bytes()
    cat = Catalog.load(p)
    assert cat.sha256 == "sha256:" + hashlib.sha256(first).hexdigest()
    write(tmp, {"version": 1, "sources": [src(), {"id": "more", "path": "more"}]})
    # The snapshot keeps the digest of what it parsed until it reloads.
    assert cat.sha256 == "sha256:" + hashlib.sha256(first).hexdigest()
    assert cat.reload().ok
    assert (
        cat.sha256
        == "sha256:" + hashlib.sha256(p.read_bytes()).hexdigest()
        != ("sha256:" + hashlib.sha256(first).hexdigest())
    )
    parsed = Catalog.parse(first.decode(), base_dir=tmp)
    assert parsed.sha256 is None


def test_every_problem_is_reported_whatever_else_is_wrong(tmp: Path) -> None:
    """docs/spec.md §4.1: parsing collects every problem — an entry's path
    is checked with a bad id, a memory overlap is found beside other
    problems of either entry — root problems come first, and nesting the
    JSON reader takes never raises."""
    (tmp / "docs" / "mem").mkdir(parents=True, exist_ok=True)
    assert codes_of(tmp, {"version": 1, "sources": [{"id": 7, "path": "/etc"}]}) == [
        "InvalidSourceId",
        "AbsolutePath",
    ]
    assert codes_of(tmp, {"version": 1, "sources": [{"path": "../.."}]}) == [
        "InvalidSourceId",
        "OutsideRoot",
    ]
    overlap = [src(x=1), MEM("./docs/mem", authority="bogus")]
    assert codes_of(tmp, {"version": 1, "sources": overlap}) == [
        "UnknownSourceProperty",
        "IllegalAuthority",
        "MemoryOverlapsKnowledge",
    ]
    doc = {"settings": 5, "version": 1, "sources": [{"id": "a", "path": "nope"}]}
    assert codes_of(tmp, doc) == ["MalformedSettings", "TargetNotFound"]
    for depth in (300, 500, 700):
        deep = '{"version": 1, "sources": [' + json.dumps(src()) + '], "x": '
        assert codes_of(tmp, deep + "[" * depth + "]" * depth + "}") == ["UnknownRootProperty"]


def test_a_catalog_nested_deeper_than_the_reader_follows_says_so() -> None:
    """docs/spec.md §4.1: well-formed JSON nested past what Python's reader
    follows is a ParseError that says why."""
    deep = '{"version": 1, "x": ' + "[" * 5000 + "]" * 5000 + "}"
    with pytest.raises(CatalogError) as e:
        Catalog.parse(deep, base_dir=".")
    assert [(d.code, d.message) for d in e.value.diagnostics] == [
        ("ParseError", "catalog is not valid JSON: nested too deeply")
    ]


def test_a_catalog_path_no_file_can_have_is_a_parse_error(tmp: Path) -> None:
    """docs/spec.md §4.3, §8: a NUL or an unencodable path is a ParseError,
    as a missing file is, not a bare ValueError."""
    for bad in ("a\x00b", "\ud800"):
        with pytest.raises(CatalogError) as e:
            Catalog.load(tmp / bad)
        assert [d.code for d in e.value.diagnostics] == ["ParseError"]
