"""Settings files (docs/spec.md §13): a versioned JSON file read entry by
entry (a bad entry is a diagnostic and is ignored, the rest applies), written
back byte-stably, applied by a resolver under its explicit arguments, and
named by a catalog."""

from __future__ import annotations

import dataclasses
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from conftest import write_bundle
from hypothesis import given, settings
from hypothesis import strategies as st
from okfast import (
    BM25FParams,
    Catalog,
    CatalogError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    OkfastError,
    Query,
    Resolver,
    Scorer,
    StalePolicy,
    Strategy,
)
from okfast.errors import SettingsError
from okfast.scoring import BM25F_FIELDS, LANGUAGES
from okfast.settings import Settings

FULL: dict[str, Any] = {
    "version": 1,
    "scorer": "bm25f",
    "strategy": "merged",
    "fairness_quota": 2,
    "rrf_k": 30,
    "bm25f": {
        "k1": 1.5,
        "weights": {"title": 4, "tags": 1, "description": 1.5, "body": 1},
        "b": {"title": 0.5, "tags": 0.0, "description": 0.25, "body": 0.75},
        "language": "english",
        "stop_words": True,
    },
    "languages": {"docs": "german"},
    "provenance": {"okfast": "0.1.0", "by": "hand"},
}


def test_every_entry_is_read() -> None:
    s = Settings.parse(json.dumps(FULL))
    assert s.diagnostics == ()
    assert s.scorer is Scorer.BM25F
    assert s.strategy is Strategy.MERGED
    assert (s.fairness_quota, s.rrf_k) == (2, 30)
    assert s.bm25f == BM25FParams(
        k1=1.5,
        title_weight=4,
        tags_weight=1,
        description_weight=1.5,
        body_weight=1,
        title_b=0.5,
        tags_b=0.0,
        description_b=0.25,
        body_b=0.75,
        language="english",
        stop_words=True,
    )
    assert s.languages == {"docs": "german"}
    assert s.provenance == {"okfast": "0.1.0", "by": "hand"}


params = st.builds(
    BM25FParams,
    k1=st.floats(0, 5),
    title_weight=st.floats(0, 5),
    body_b=st.floats(0, 1),
    language=st.sampled_from([None, *LANGUAGES]),
    stop_words=st.booleans(),
)


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from([None, *Scorer]),
    st.sampled_from([None, *Strategy]),
    st.one_of(st.none(), st.integers(1, 50)),
    st.one_of(st.none(), st.integers(1, 500)),
    st.one_of(st.none(), params),
    st.dictionaries(st.sampled_from(["a", "b.c", "d_1"]), st.sampled_from([*LANGUAGES, "none"])),
)
def test_written_settings_read_back_equal_and_byte_stable(
    scorer: Scorer | None,
    strategy: Strategy | None,
    quota: int | None,
    rrf_k: int | None,
    bm25f: BM25FParams | None,
    languages: dict[str, str],
) -> None:
    s = Settings(scorer, strategy, quota, rrf_k, bm25f, languages, {"seed": 1})
    text = s.to_json()
    back = Settings.parse(text)
    assert back == s
    assert back.diagnostics == ()
    assert back.to_json() == text


@pytest.mark.parametrize(
    ("entry", "code", "word"),
    [
        ({"scorer": "bm26"}, "IllegalValue", "weighted_count, bm25f, fusion"),
        ({"strategy": 3}, "IllegalValue", "grouped"),
        ({"fairness_quota": 0}, "IllegalValue", "fairness_quota"),
        ({"rrf_k": 2.5}, "IllegalValue", "rrf_k"),
        ({"rrf_k": True}, "IllegalValue", "rrf_k"),
        # Beyond a count (docs/spec.md §5.1), and beyond a float: diagnostics,
        # not OverflowError.
        ({"rrf_k": 2**32}, "IllegalValue", "rrf_k"),
        ({"fairness_quota": 10**400}, "IllegalValue", "fairness_quota"),
        ({"bm25f": {"k1": 10**400}}, "IllegalValue", "k1"),
        ({"bm25f": {"weights": {"body": 10**400}}}, "IllegalValue", "body_weight"),
        ({"colour": "red"}, "UnknownProperty", "colour"),
        ({"bm25f": []}, "WrongType", "bm25f"),
        ({"bm25f": {"k1": -1}}, "IllegalValue", "k1"),
        ({"bm25f": {"b": {"body": 2}}}, "IllegalValue", "body_b"),
        ({"bm25f": {"weights": {"summary": 2}}}, "UnknownProperty", "summary"),
        ({"bm25f": {"language": "klingon"}}, "IllegalValue", "klingon"),
        ({"bm25f": {"stop_words": "yes"}}, "IllegalValue", "stop_words"),
        ({"bm25f": {"k2": 1}}, "UnknownProperty", "k2"),
        ({"languages": {"docs": "latin"}}, "IllegalValue", "latin"),
        ({"languages": ["docs"]}, "WrongType", "languages"),
        ({"provenance": 7}, "WrongType", "provenance"),
    ],
)
def test_a_bad_entry_is_a_diagnostic_and_the_rest_applies(
    entry: dict[str, Any], code: str, word: str
) -> None:
    doc = {"version": 1, "scorer": "fusion", "rrf_k": 7, "bm25f": {"k1": 1.25}}
    bad_bm25f = isinstance(entry.get("bm25f"), dict)
    if bad_bm25f:
        entry = {"bm25f": {"k1": 1.25, **entry["bm25f"]}}
    s = Settings.parse(json.dumps(doc | entry))
    assert [d.code for d in s.diagnostics] == [code]
    assert word in s.diagnostics[0].message
    assert s.scorer is (Scorer.FUSION if "scorer" not in entry else None)
    assert s.rrf_k == (7 if "rrf_k" not in entry else None)
    if bad_bm25f:
        # Only the bad value is dropped: a good k1 stays, a bad one is the default.
        k1_was_bad = entry["bm25f"]["k1"] != 1.25
        assert s.bm25f is not None and s.bm25f.k1 == (2.0 if k1_was_bad else 1.25)


def test_an_integer_too_long_to_convert_is_an_illegal_value() -> None:
    # Valid JSON, so a diagnostic for its entry, not a file that is not JSON.
    huge = "9" * 5000
    s = Settings.parse(
        f'{{"version": 1, "scorer": "bm25f", "rrf_k": {huge}, "provenance": {{"n": [{huge}]}}}}'
    )
    assert [(d.code, d.message) for d in s.diagnostics] == [
        (
            "IllegalValue",
            "'provenance' holds <an integer of 5000 digits>, which cannot be kept as read",
        ),
        (
            "IllegalValue",
            "'rrf_k' must be a whole number from 1 to 4294967295, got <an integer of 5000 digits>",
        ),
    ]
    assert (s.scorer, s.rrf_k, s.provenance) == (Scorer.BM25F, None, None)
    # What is kept can be written back.
    assert Settings.parse(s.to_json()).scorer is Scorer.BM25F


@pytest.mark.parametrize("version", ["2", "1.0", "true", '"1"'])
def test_another_version_is_refused_whole(version: str) -> None:
    s = Settings.parse(f'{{"version": {version}, "scorer": "bm25f"}}')
    assert [d.code for d in s.diagnostics] == ["WrongVersion"]
    assert s == Settings()


@pytest.mark.parametrize(
    "text",
    [
        "",
        "[1]",
        "{",
        '{"version": NaN}',
        '{"version": 1, "scorer": "bm25f", "version": 1}',
        '{"version": 1, "bm25f": {"k1": 1, "k1": 2}}',
        '{"version": 1, "x": ' + "[" * 100_000,
    ],
)
def test_text_that_is_not_a_json_object_raises(text: str, tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="^settings: ") as e:
        Settings.parse(text)
    assert isinstance(e.value, OkfastError) and isinstance(e.value, ValueError)
    # Read from a file, the message names it.
    (tmp_path / "s.json").write_text(text)
    with pytest.raises(SettingsError, match=f"^settings {tmp_path / 's.json'}: "):
        Settings.load(tmp_path / "s.json")


def test_a_file_nested_deeper_than_the_reader_follows_says_so() -> None:
    """docs/spec.md §4.1, §13.2: well-formed JSON nested past what Python's
    reader follows cannot be read, and the message says why rather than
    passing on the interpreter's recursion error."""
    deep = '{"version": 1, "provenance": {"a": ' + "[" * 5000 + "]" * 5000 + "}}"
    with pytest.raises(SettingsError) as e:
        Settings.parse(deep)
    assert str(e.value) == "settings: not valid JSON: nested too deeply"


def test_a_missing_file_raises(tmp_path: Path) -> None:
    """docs/spec.md §13.2: the message begins ``settings PATH: `` whatever
    stopped the read (a missing file, bytes that are not UTF-8)."""
    import re

    with pytest.raises(SettingsError, match=re.escape(f"settings {tmp_path / 'nope.json'}: ")):
        Settings.load(tmp_path / "nope.json")
    (tmp_path / "latin.json").write_bytes(b'{"version": 1, "x": "\xe9"}')
    with pytest.raises(SettingsError, match=re.escape(f"settings {tmp_path / 'latin.json'}: not")):
        Settings.load(tmp_path / "latin.json")


def test_save_writes_what_load_reads(tmp_path: Path) -> None:
    s = Settings.parse(json.dumps(FULL))
    s.save(tmp_path / "deep" / "s.json")
    assert Settings.load(tmp_path / "deep" / "s.json") == s
    assert [p.name for p in (tmp_path / "deep").iterdir()] == ["s.json"]


@pytest.mark.parametrize(
    ("text", "held"),
    [
        ('{"x": 1e999}', "inf"),
        ('{"x": [-1e999]}', "-inf"),
        ('{"x": {"y": "a\\ud800"}}', "text with a lone surrogate (U+D800)"),
        ('{"\\udc00": 1}', "a key of text with a lone surrogate (U+DC00)"),
    ],
)
def test_a_provenance_that_cannot_be_written_back_is_dropped(
    text: str, held: str, tmp_path: Path
) -> None:
    # Kept as read, it must be written back as read (docs/spec.md §13.2):
    # strict JSON has no Infinity and UTF-8 no lone surrogate.
    s = Settings.parse(
        f'{{"version": 1, "scorer": "bm25f", "provenance": {text}, '
        '"languages": {"docs": "german", "\\ud800": "english"}}'
    )
    assert [(d.code, d.message) for d in s.diagnostics] == [
        ("IllegalValue", f"'provenance' holds {held}, which cannot be kept as read"),
        (
            "IllegalValue",
            "languages key '\\ud800' is not a source id: text with a lone surrogate (U+D800)",
        ),
    ]
    assert (s.scorer, s.provenance, s.languages) == (Scorer.BM25F, None, {"docs": "german"})
    s.save(tmp_path / "s.json")
    back = Settings.load(tmp_path / "s.json")
    assert back == s and back.diagnostics == ()


def test_a_provenance_given_as_a_mapping_holds_only_json_values(tmp_path: Path) -> None:
    for value, held in [
        (float("nan"), "nan"),
        ((1, 2), "a tuple, not a JSON value"),
        ({1: "a"}, "the key 1, not text"),
        (10**5000, "an integer of 16610 bits (more digits than Python writes)"),
    ]:
        s = Settings.from_dict({"version": 1, "provenance": {"x": value}, "languages": {2: "none"}})
        assert [d.message for d in s.diagnostics] == [
            f"'provenance' holds {held}, which cannot be kept as read",
            "languages key 2 is not a source id: not text",
        ]
        assert (s.provenance, s.languages) == (None, {})
    kept = Settings.from_dict({"version": 1, "provenance": {"n": [1, 2.5, None, True, "é"]}})
    assert kept.diagnostics == ()
    kept.save(tmp_path / "kept.json")
    assert Settings.load(tmp_path / "kept.json").provenance == kept.provenance


def test_a_provenance_integer_too_long_to_write_is_refused_when_made() -> None:
    """docs/spec.md §13.2: the constructor refuses what save() could not write."""
    with pytest.raises(InvalidArgumentError, match="16610 bits"):
        Settings(provenance={"a": 10**5000})


def test_save_and_from_dict_refuse_what_is_no_path_or_no_mapping(tmp_path: Path) -> None:
    """docs/spec.md §13.2: okfast's errors, not os's ValueError or
    UnicodeEncodeError or an AttributeError from inside."""
    for path, error, words in [
        (None, InvalidArgumentTypeError, "a settings path is text"),
        (b"/tmp/x.json", InvalidArgumentTypeError, "a settings path is text"),
        ("", InvalidArgumentError, "a settings path is empty"),
        (f"{tmp_path}/a\x00b", InvalidArgumentError, "names no file: it holds a NUL"),
        (f"{tmp_path}/\ud800", InvalidArgumentError, "names no file"),
    ]:
        with pytest.raises(error, match=words):
            Settings().save(path)  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []
    for doc in (None, [], "{}"):
        with pytest.raises(InvalidArgumentTypeError, match="settings are a mapping"):
            Settings.from_dict(doc)  # type: ignore[arg-type]


def test_equal_settings_write_the_same_bytes_negative_zero_included() -> None:
    """docs/spec.md §13.2: -0.0 equals 0.0, so it is written as 0.0."""
    negative, positive = BM25FParams(k1=-0.0, body_b=-0.0), BM25FParams(k1=0.0, body_b=0.0)
    assert Settings(bm25f=negative) == Settings(bm25f=positive)
    assert Settings(bm25f=negative).to_json() == Settings(bm25f=positive).to_json()
    assert str(StalePolicy.tolerate(-0.0)) == "tolerate:0"


@pytest.mark.parametrize(
    ("fields", "error", "message"),
    [
        ({"scorer": "bm26"}, InvalidArgumentError, "unknown scorer 'bm26'"),
        ({"strategy": "sideways"}, InvalidArgumentError, "unknown strategy 'sideways'"),
        ({"fairness_quota": 0}, InvalidArgumentError, "fairness_quota must be a whole number"),
        ({"fairness_quota": True}, InvalidArgumentError, "fairness_quota must be a whole number"),
        ({"rrf_k": 2.5}, InvalidArgumentError, "rrf_k must be a whole number"),
        ({"bm25f": {"k1": 1.2}}, InvalidArgumentTypeError, "must be a BM25FParams"),
        ({"languages": ["a"]}, InvalidArgumentTypeError, "must map source ids"),
        ({"languages": {"a": "klingon"}}, InvalidArgumentError, "languages['a'] must be one of"),
        ({"languages": {"\ud800": "none"}}, InvalidArgumentError, "lone surrogate"),
        ({"provenance": [1]}, InvalidArgumentTypeError, "must be a mapping"),
        ({"provenance": {"x": float("inf")}}, InvalidArgumentError, "holds inf"),
        ({"provenance": {"x": object()}}, InvalidArgumentError, "not a JSON value"),
    ],
)
def test_settings_made_directly_are_checked(
    fields: dict[str, Any], error: type[Exception], message: str
) -> None:
    """docs/spec.md §13.2: what a file would drop as a diagnostic, the
    constructor refuses, so every Settings can be saved and read back."""
    with pytest.raises(error, match=re.escape(message)):
        Settings(**fields)
    with pytest.raises(error):
        dataclasses.replace(Settings(), **fields)


def test_settings_made_directly_keep_enums_and_a_copy_of_languages(tmp_path: Path) -> None:
    languages = {"a": "english"}
    s = Settings(scorer="bm25f", strategy="merged", languages=languages, provenance={"n": 1})
    languages["b"] = "german"
    assert (s.scorer, s.strategy, s.languages) == (
        Scorer.BM25F,
        Strategy.MERGED,
        {"a": "english"},
    )
    s.save(tmp_path / "s.json")
    assert Settings.load(tmp_path / "s.json") == s


def two_sources(tmp: Path, extra: dict[str, Any] | None = None) -> Path:
    page = "---\ntype: T\ntitle: {t}\ndescription: d\n---\n{b}\n"
    write_bundle(tmp / "a", {"x.md": page.format(t="Running late", b="runs and running")})
    write_bundle(tmp / "b", {"y.md": page.format(t="Runs", b="the running total")})
    doc = {"version": 1, "sources": [{"id": "a", "path": "./a"}, {"id": "b", "path": "./b"}]}
    (tmp / "catalog.json").write_text(json.dumps(doc | (extra or {})))
    return tmp / "catalog.json"


def test_a_resolver_applies_settings_under_its_explicit_arguments(tmp_path: Path) -> None:
    cat = Catalog.load(two_sources(tmp_path))
    s = Settings(Scorer.FUSION, Strategy.MERGED, 3, 9, BM25FParams(k1=1.0), {"a": "english"})
    r = Resolver(cat, settings=s)
    assert r.default_scorer is Scorer.FUSION
    assert r.default_strategy is Strategy.MERGED
    assert (r.default_fairness_quota, r.default_rrf_k) == (3, 9)
    assert r.default_bm25f == BM25FParams(k1=1.0)
    assert r.snapshot("a").language == "english" and r.snapshot("b").language is None
    same = Resolver(
        cat,
        default_scorer="fusion",
        default_strategy="merged",
        default_fairness_quota=3,
        default_rrf_k=9,
        default_bm25f=BM25FParams(k1=1.0),
    )
    # Only the settings stem source a's tokens, so its BM25F scores differ.
    q = Query("running", scorer="bm25f")
    assert r.search(q).passages.keys() != same.search(q).passages.keys()
    assert [s for s, _, _ in r.search(q).passages.keys()] == ["a", "b"]
    explicit = Resolver(cat, settings=s, default_scorer="weighted_count", default_rrf_k=60)
    assert explicit.default_scorer is Scorer.WEIGHTED_COUNT and explicit.default_rrf_k == 60
    plain = Resolver(cat)
    assert plain.search(Query("running", scorer="fusion", strategy="merged")).digest == (
        Resolver(cat, settings=Settings(rrf_k=60))
        .search(Query("running", scorer="fusion", strategy="merged"))
        .digest
    )


def test_a_resolver_reads_the_settings_file_a_catalog_names(tmp_path: Path) -> None:
    path = two_sources(tmp_path, {"settings": "./okfast-settings.json"})
    cat = Catalog.load(path)
    assert cat.settings_path == tmp_path / "okfast-settings.json"
    assert Resolver(cat).settings == Settings() and Resolver(cat).settings_diagnostics == ()
    (tmp_path / "okfast-settings.json").write_text(
        json.dumps({"version": 1, "scorer": "bm25f", "languages": {"zz": "english"}, "x": 1})
    )
    r = Resolver(cat)
    assert r.default_scorer is Scorer.BM25F
    assert [d.code for d in r.settings_diagnostics] == ["UnknownProperty", "UnknownSource"]
    (tmp_path / "okfast-settings.json").write_text("{not json")
    broken = Resolver(cat)
    assert broken.default_scorer is Scorer.WEIGHTED_COUNT
    assert [d.code for d in broken.settings_diagnostics] == ["SettingsUnreadable"]
    # Printed under the file's name (§13.4), the message does not name it again.
    assert broken.settings_diagnostics[0].message.startswith("not valid JSON: ")
    assert Resolver(cat, settings=Settings(scorer=Scorer.FUSION)).default_scorer is Scorer.FUSION


@pytest.mark.parametrize("link", ["loop", "dangling"])
def test_a_broken_link_the_catalog_names_as_settings_is_unreadable_not_absent(
    tmp_path: Path, link: str
) -> None:
    """docs/spec.md §13.3: the name is there, what it names cannot be read."""
    cat = Catalog.load(two_sources(tmp_path, {"settings": "./okfast-settings.json"}))
    target = "okfast-settings.json" if link == "loop" else "gone.json"
    (tmp_path / "okfast-settings.json").symlink_to(target)
    r = Resolver(cat)
    assert r.settings == Settings()
    assert [d.code for d in r.settings_diagnostics] == ["SettingsUnreadable"]


@pytest.mark.parametrize("name", ["./" + "s" * 300 + ".json", "./a-file/okfast-settings.json"])
def test_a_settings_name_no_file_can_have_is_unreadable_not_absent(
    tmp_path: Path, name: str
) -> None:
    """docs/spec.md §13.3: only a name that is not there is absent; one too
    long for the file system, or below a file, can never be read (nor
    written by ``tune --apply``) and says so."""
    (tmp_path / "a-file").write_text("")
    cat = Catalog.load(two_sources(tmp_path, {"settings": name}))
    r = Resolver(cat)
    assert r.settings == Settings()
    assert [d.code for d in r.settings_diagnostics] == ["SettingsUnreadable"]
    (tmp_path / "a-file").unlink()
    if len(name) < 255:  # now merely missing: the defaults, no diagnostic
        assert Resolver(cat).settings_diagnostics == ()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
def test_a_fifo_the_catalog_names_as_settings_is_unreadable_not_waited_on(
    tmp_path: Path,
) -> None:
    """docs/spec.md §13.3: reading it would wait for a writer; it is a
    diagnostic and the resolver runs on its defaults."""
    cat = Catalog.load(two_sources(tmp_path, {"settings": "./okfast-settings.json"}))
    os.mkfifo(tmp_path / "okfast-settings.json")
    r = Resolver(cat)
    assert r.settings == Settings()
    assert [(d.code, "not a regular file" in d.message) for d in r.settings_diagnostics] == [
        ("SettingsUnreadable", True)
    ]


def test_save_writes_through_a_link_and_into_a_fifo(tmp_path: Path) -> None:
    """docs/spec.md §13.2: what is at the path is written to, not replaced."""
    s = Settings(scorer=Scorer.BM25F, rrf_k=7)
    real = tmp_path / "real.json"
    real.write_text("{}")
    (tmp_path / "link.json").symlink_to(real)
    s.save(tmp_path / "link.json")
    assert (tmp_path / "link.json").is_symlink() and Settings.load(real) == s
    if hasattr(os, "mkfifo"):
        import threading

        os.mkfifo(tmp_path / "pipe.json")
        got: list[str] = []
        reader = threading.Thread(
            target=lambda: got.append((tmp_path / "pipe.json").read_text()), daemon=True
        )
        reader.start()
        s.save(tmp_path / "pipe.json")
        reader.join(30)
        assert got == [s.to_json()] and not (tmp_path / "pipe.json").is_file()
    (tmp_path / "dir.json").mkdir()
    with pytest.raises(IsADirectoryError):
        s.save(tmp_path / "dir.json")


def test_a_configured_resolver_is_a_new_one_on_the_same_load(tmp_path: Path) -> None:
    cat = Catalog.load(two_sources(tmp_path))
    first = Resolver(
        cat,
        settings=Settings(Scorer.FUSION, Strategy.MERGED, 1, 9, BM25FParams(k1=1.0)),
        default_strategy="priority_weighted",
        default_fairness_quota=2,
    )
    for s in (
        Settings(),
        Settings(Scorer.BM25F, Strategy.PRIORITY_WEIGHTED),
        Settings(Scorer.WEIGHTED_COUNT, Strategy.RECIPROCAL_RANK, 3, 20),
        Settings(languages={"a": "english", "zz": "german"}),
    ):
        fresh = Resolver(cat, settings=s)
        made = first.configured(s)
        # None of the first resolver's defaults, its arguments' or its settings'.
        assert made.settings == s and made.settings_diagnostics == fresh.settings_diagnostics
        assert [getattr(made, k) for k in vars(fresh) if k.startswith("default_")] == [
            getattr(fresh, k) for k in vars(fresh) if k.startswith("default_")
        ]
        for text in ("running", "walk"):
            assert made.search(text).digest == fresh.search(text).digest
    assert first.default_fairness_quota == 2 and first.default_rrf_k == 9
    # The loaded snapshots are shared, not loaded again.
    assert first.configured(Settings()).snapshot("b") is first.snapshot("b")
    # A default_strategy given wins over the settings', as in the constructor.
    s = Settings(Scorer.BM25F, Strategy.MERGED)
    made = first.configured(s, default_strategy="reciprocal_rank")
    fresh = Resolver(cat, settings=s, default_strategy="reciprocal_rank")
    assert made.default_strategy is Strategy.RECIPROCAL_RANK
    assert made.search("walk").digest == fresh.search("walk").digest


@pytest.mark.parametrize("value", ["", "/etc/okfast.json", "../out.json", 3, "\udc00x.json"])
def test_a_bad_settings_path_in_a_catalog_is_a_catalog_diagnostic(
    tmp_path: Path, value: object
) -> None:
    (tmp_path / "in").mkdir()
    path = two_sources(tmp_path / "in", {"settings": value})
    with pytest.raises(CatalogError) as e:
        Catalog.load(path)
    assert [d.code for d in e.value.diagnostics] == ["MalformedSettings"]


def test_field_names_are_the_bm25f_fields() -> None:
    assert set(FULL["bm25f"]["weights"]) == set(BM25F_FIELDS)


@pytest.mark.parametrize("name", ["a\x00b", "\ud800.json"])
def test_a_file_name_no_file_can_have_is_a_settings_error(name: str) -> None:
    with pytest.raises(SettingsError, match="could not be read"):
        Settings.load(name)


def test_numpy_integers_are_stored_as_ints(tmp_path: Path) -> None:
    """A quota or rrf_k from numpy is a whole number, saved as JSON reads it."""
    import numpy as np

    s = Settings(fairness_quota=np.int64(2), rrf_k=np.int32(30))
    assert (type(s.fairness_quota), type(s.rrf_k)) == (int, int)
    s.save(tmp_path / "s.json")
    assert Settings.load(tmp_path / "s.json") == s


def test_parse_takes_text_and_the_names_are_exported() -> None:
    """docs/spec.md §8: a non-string is okfast's type error (AttributeError
    before); §13's names are on ``okfast`` as the preamble says."""
    import okfast

    for bad in (3, None, b"{}"):
        with pytest.raises(okfast.InvalidArgumentTypeError):
            Settings.parse(bad)  # type: ignore[arg-type]
    for name in ("Settings", "SettingsError", "SettingsDiagnostic", "Explanation", "TermMatch"):
        assert name in okfast.__all__ and hasattr(okfast, name)


def test_a_provenance_too_deep_to_write_back_is_dropped(tmp_path: Path) -> None:
    # docs/spec.md §13.2: save() could not write it (its JSON writer recurses).
    deep = "[" * 201 + "]" * 201
    s = Settings.parse(f'{{"version": 1, "provenance": {{"x": {deep}}}}}')
    assert [d.code for d in s.diagnostics] == ["IllegalValue"]
    assert "nested deeper than 200 levels" in s.diagnostics[0].message
    assert s.provenance is None
    kept = Settings.parse(f'{{"version": 1, "provenance": {{"x": {"[" * 199 + "]" * 199}}}}}')
    assert kept.diagnostics == () and kept.provenance is not None
    kept.save(tmp_path / "s.json")
    assert Settings.load(tmp_path / "s.json") == kept


def test_equal_settings_write_equal_bytes() -> None:
    # docs/spec.md §13.2: 2 and 2.0 are one k1; tune tells candidates apart by the bytes.
    a = Settings(bm25f=BM25FParams(k1=2, title_weight=3, body_b=1))
    b = Settings(bm25f=BM25FParams(k1=2.0, title_weight=3.0, body_b=1.0))
    assert a == b and a.to_json() == b.to_json()
    assert '"k1": 2.0' in a.to_json()


def test_with_choices_refuses_as_the_constructor_does() -> None:
    for bad in ({"scorer": "bm26"}, {"strategy": "sideways"}, {"rrf_k": 0}):
        with pytest.raises(InvalidArgumentError):
            Settings().with_choices(**bad)
    assert Settings().with_choices(scorer="bm25f", strategy=None).scorer is Scorer.BM25F


def test_a_settings_diagnostic_is_one_line_whatever_the_file_name_holds(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """docs/spec.md §10.1, §13.4: a line feed or carriage return in the file's
    name or a quoted entry is written as \\n or \\r: one problem, one line."""
    from okfast.settings import SettingsDiagnostic, print_diagnostics

    print_diagnostics("s\nokfast: x.json", [SettingsDiagnostic("UnknownProperty", "key 'a\rb'")])
    assert capsys.readouterr().err.splitlines() == [
        "okfast: settings s\\nokfast: x.json: [UnknownProperty] key 'a\\rb'"
    ]
