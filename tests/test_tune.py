"""``okfast tune`` (docs/spec.md §14): candidates deterministic for a seed,
the k-fold acceptance read literally, proposals only on held-out wins,
apply/revert with a history, the CLI, Ctrl-C, the plot."""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import sys
from itertools import takewhile
from pathlib import Path
from typing import Any

import okfast.tune as tune_module
import pytest
from conftest import write_bundle
from eval_extra import requires_eval_extra
from hypothesis import example, given
from hypothesis import strategies as st
from okfast import Catalog, InvalidArgumentError, JudgedSet, Resolver, Scorer, Strategy
from okfast.cli import main
from okfast.qrels import JudgedQuery
from okfast.scoring import DEFAULT_BM25F
from okfast.settings import Settings
from okfast.tune import (
    STANDARD_ERRORS,
    Trial,
    _choose,
    _decide,
    anchors,
    candidates,
    current_of,
    space_size,
    tune,
    with_provenance,
)
from okfast.tune_history import apply

TOPICS = ["lamination", "proofing", "scoring", "retarding", "glazing", "tempering",
          "folding", "docking", "shaping", "steaming"]  # fmt: skip


def corpus(tmp: Path, *, two_sources: bool = False) -> tuple[Path, Path]:
    """Ten topic concepts, each naming its topic once, and chatty concepts
    full of question words: the weighted count ranks the chatty ones first for
    "how do I ..." questions, BM25F the topic (docs/spec.md §12)."""
    page = "---\ntype: Guide\ntitle: {t}\ndescription: {d}\n---\n{b}\n"
    files = {
        f"topics/{w}.md": page.format(t=f"Note {i}", d="A bakery note.", b=f"About {w}.")
        for i, w in enumerate(TOPICS)
    }
    chatty = " ".join(["how do I do it, how do I know"] * 6)
    files |= {f"chat/c{i}.md": page.format(t="Chat", d="how do I", b=chatty) for i in range(8)}
    write_bundle(tmp / "kb", files)
    sources = [{"id": "kb", "path": "./kb"}]
    if two_sources:
        write_bundle(tmp / "more", {"x.md": page.format(t="Extra", d="d", b="how do I bake")})
        sources.append({"id": "more", "path": "./more", "priority": 5})
    doc = {"version": 1, "sources": sources, "settings": "./okfast-settings.json"}
    (tmp / "catalog.json").write_text(json.dumps(doc))
    lines = [
        json.dumps({"qid": f"q{i}", "query": f"how do I do {w}", "relevant": {f"kb:topics/{w}": 2}})
        for i, w in enumerate(TOPICS)
    ]
    (tmp / "q.jsonl").write_text("\n".join(lines) + "\n")
    return tmp / "catalog.json", tmp / "q.jsonl"


def test_candidates_are_distinct_deterministic_and_start_with_the_current() -> None:
    current = Settings(scorer=Scorer.BM25F, rrf_k=5)
    a = candidates(current, multi_source=False, budget=80, seed=3)
    assert [c.to_json() for c in a] == [
        c.to_json() for c in candidates(current, multi_source=False, budget=80, seed=3)
    ]
    assert [c.to_json() for c in a] != [
        c.to_json() for c in candidates(current, multi_source=False, budget=80, seed=4)
    ]
    assert len(a) == 80 and len({c.to_json() for c in a}) == 80
    # The current settings first (rrf_k dropped: BM25F does not read it), then
    # each scorer's defaults.
    assert a[0] == Settings(scorer=Scorer.BM25F, strategy=Strategy.GROUPED, bm25f=a[0].bm25f)
    assert [c.scorer for c in a[1:3]] == [Scorer.WEIGHTED_COUNT, Scorer.FUSION]
    # One source: the strategy and the quota are not searched.
    assert {c.strategy for c in a} == {Strategy.GROUPED}
    assert {c.fairness_quota for c in a} == {None}
    multi = candidates(Settings(), multi_source=True, budget=200, seed=0)
    assert len({c.strategy for c in multi}) == len(Strategy)
    assert space_size(True) > space_size(False) > 10**5


def test_the_grid_is_used_when_its_union_with_the_leading_ones_fits_the_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A small space holding every scorer's defaults: the leading
    # configurations are all in the grid, so the union is the space itself
    # and a budget of its size takes the whole grid, in grid order.
    for name, values in [
        ("K1", (2.0, 1.2)),
        ("SHORT_B", (0.8, 0.2)),
        ("BODY_B", (0.6,)),
        ("TITLE_WEIGHT", (3.0,)),
        ("SIDE_WEIGHT", (2.0,)),
        ("ANALYZERS", ((None, False),)),
        ("RRF_K", (60,)),
    ]:
        monkeypatch.setattr(tune_module, name, values)
    n = space_size(False)
    assert n == 1 + 8 * 2
    got = [c.to_json() for c in candidates(Settings(), multi_source=False, budget=n, seed=0)]
    grid = [
        tune_module._settings_of(v, Settings()).to_json()
        for v in itertools.product(*tune_module._space(False))
    ]
    leading = got[:3]
    assert set(leading) <= set(grid)
    assert got == leading + [g for g in dict.fromkeys(grid) if g not in leading]


def trial(*values: float) -> Trial:
    return Trial(Settings(rrf_k=len(values)), tuple(values))


def test_the_acceptance_is_the_k_fold_read_literally() -> None:
    qs = [JudgedQuery(f"q{i}", "t", {}) for i in range(4)]
    # Trial 1 wins every training split but loses the held-out query each
    # time; trial 2 is better everywhere: the folds choose 1, holdout worse.
    current = trial(0.5, 0.5, 0.5, 0.5)
    overfit = trial(1.0, 1.0, 1.0, 0.0)
    literal = {"anchored": [0], "standard_errors": 0.0}
    r = _decide(qs, [current, overfit], "ndcg@10", 2, 0, 2, 2, False, **literal)
    # Fold 0 holds q0, q2 (train q1, q3: overfit 0.5 vs current 0.5, a tie:
    # the current wins); fold 1 holds q1, q3 (train q0, q2: overfit 1.0).
    assert [(f.queries, f.chosen) for f in r.folds] == [((0, 2), 0), ((1, 3), 1)]
    assert r.holdout == pytest.approx((0.5 + 1.0 + 0.5 + 0.0) / 4)
    assert r.current == 0.5 and r.proposed is None
    assert r.deltas == {"q0": 0.0, "q1": 0.5, "q2": 0.0, "q3": -0.5}
    better = trial(0.9, 0.9, 0.9, 0.9)
    r = _decide(qs, [current, overfit, better], "ndcg@10", 2, 0, 3, 3, False, **literal)
    assert [f.chosen for f in r.folds] == [2, 1]
    assert r.holdout == pytest.approx((0.9 + 1.0 + 0.9 + 0.0) / 4)
    assert r.proposed == 2


def test_a_lead_within_the_standard_errors_keeps_the_anchor() -> None:
    qs = [JudgedQuery(f"q{i}", "t", {}) for i in range(6)]
    current = trial(0.5, 0.5, 0.5, 0.5, 0.5, 0.5)
    default = trial(0.6, 0.6, 0.6, 0.6, 0.6, 0.6)
    # Leads the default by 0.1 on average, with a standard error of the
    # per-query differences of sqrt(0.48 / 5) / sqrt(6) = 0.1265.
    lucky = trial(0.9, 0.3, 0.9, 0.3, 0.9, 0.9)
    trials, every = [current, default, lucky], range(6)
    assert _choose(trials, every, [0, 1], 0.0) == 2
    assert _choose(trials, every, [0, 1], 0.75) == 2  # 0.1 > 0.75 * 0.1265
    assert _choose(trials, every, [0, 1], 0.8) == 1  # 0.1 <= 0.8 * 0.1265
    assert _choose(trials, every, [0, 1], STANDARD_ERRORS) == 1
    # It leads the current by 0.2 (the same standard error): at one standard
    # error, chosen over the current alone, not over the default too.
    assert _choose(trials, every, [0], 1.0) == 2
    assert _choose(trials, every, [0, 1], 1.0) == 1
    # Of the anchors within the margin, the best; the current wins a tie.
    assert _choose([current, default, current, lucky], every, [0, 1, 2], 9.0) == 1
    assert _choose([current, current, lucky], every, [0, 1], 9.0) == 0
    # A lead with no spread is a lead at any margin.
    steady = trial(0.7, 0.7, 0.7, 0.7, 0.7, 0.7)
    assert _choose([current, default, steady], every, [0, 1], 100.0) == 2
    # The whole acceptance: the folds and the proposal keep the default.
    r = _decide(qs, trials, "ndcg@10", 3, 0, 3, 3, False, anchored=[0, 1], standard_errors=2.0)
    assert r.proposed == 1 and r.standard_errors == 2.0
    r = _decide(qs, trials, "ndcg@10", 3, 0, 3, 3, False, anchored=[0, 1], standard_errors=0.0)
    assert r.proposed == 2
    # With the current as the only anchor within the margin, nothing is proposed.
    r = _decide(
        qs, [current, lucky], "ndcg@10", 3, 0, 2, 2, False, anchored=[0], standard_errors=9.0
    )
    assert r.proposed is None and {f.chosen for f in r.folds} == {0}


@given(
    st.lists(
        st.lists(st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0]), min_size=5, max_size=5),
        min_size=1,
        max_size=6,
    ),
    st.floats(min_value=0.0, max_value=5.0),
)
def test_the_choice_is_the_best_or_an_anchor_within_the_margin(
    rows: list[list[float]], z: float
) -> None:
    trials = [trial(*r) for r in rows]
    means = [t.mean for t in trials]
    best = means.index(max(means))  # the earliest of the best
    assert _choose(trials, range(5), [0], 0.0) == best
    chosen = _choose(trials, range(5), [0], z)
    assert chosen in (0, best)
    # The anchor when the best leads it by no more than z standard errors.
    diffs = [b - a for b, a in zip(rows[best], rows[0], strict=True)]
    m = sum(diffs) / 5
    se = (sum((d - m) ** 2 for d in diffs) / 4) ** 0.5 / 5**0.5
    if m < z * se - 1e-9:
        assert chosen == 0
    if m > z * se + 1e-9:
        assert chosen == best


def test_the_anchors_are_the_current_and_the_bm25f_defaults() -> None:
    one = anchors(Settings(scorer=Scorer.FUSION, rrf_k=5), multi_source=False)
    assert [(a.scorer, a.strategy, a.bm25f) for a in one] == [
        (Scorer.FUSION, Strategy.GROUPED, DEFAULT_BM25F),
        (Scorer.BM25F, Strategy.GROUPED, DEFAULT_BM25F),
    ]
    assert anchors(Settings(scorer=Scorer.BM25F), multi_source=False) == [
        Settings(scorer=Scorer.BM25F, strategy=Strategy.GROUPED, bm25f=DEFAULT_BM25F)
    ]
    many = anchors(Settings(), multi_source=True)
    assert [(a.scorer, a.strategy) for a in many] == [
        (Scorer.WEIGHTED_COUNT, Strategy.GROUPED),
        *((Scorer.BM25F, t) for t in Strategy),
    ]
    # The candidates hold them, so they are always measured.
    got = {c.to_json() for c in candidates(Settings(), multi_source=True, budget=40, seed=0)}
    assert {a.to_json() for a in many} <= got


@requires_eval_extra
def test_tune_proposes_what_wins_on_held_out_queries(tmp_path: Path) -> None:
    catalog, qrels = corpus(tmp_path)
    resolver = Resolver(Catalog.load(catalog), max_staleness=math.inf)
    judged = JudgedSet.load(qrels)
    seen: list[tuple[int, int]] = []
    report = tune(
        resolver, judged, budget=12, seed=1, progress=lambda d, t, _b: seen.append((d, t))
    )
    assert seen == [(i, 12) for i in range(1, 13)]
    again = tune(resolver, judged, budget=12, seed=1)
    assert json.dumps(again.to_json()) == json.dumps(report.to_json())
    assert report.trials[0].settings.scorer is Scorer.WEIGHTED_COUNT
    assert report.current < 0.5 < report.holdout
    assert sorted(i for f in report.folds for i in f.queries) == list(range(10))
    proposal = report.proposal()
    assert proposal is not None and proposal.scorer is not Scorer.WEIGHTED_COUNT
    # The best measured on all queries, or a default it does not lead by more
    # than the margin (docs/spec.md §14.2).
    chosen = report.trials[report.proposed or 0]
    fixed = {a.to_json() for a in anchors(report.trials[0].settings, multi_source=False)}
    assert chosen.mean == max(t.mean for t in report.trials) or (chosen.settings.to_json() in fixed)
    # Tuning again from the proposal proposes nothing better on held-out queries
    # than it, or something that beats it there.
    after = tune(resolver, judged, current=proposal, budget=12, seed=1)
    assert after.proposed is None or after.holdout > after.current


@requires_eval_extra
def test_each_configuration_is_measured_with_its_own_defaults(tmp_path: Path) -> None:
    # A configuration without a fairness quota runs without one, as it would
    # once applied, whatever the tuning resolver's defaults (docs/spec.md §13.3).
    catalog, qrels = corpus(tmp_path, two_sources=True)
    judged = JudgedSet.load(qrels)
    plain = tune(Resolver(Catalog.load(catalog), max_staleness=math.inf), judged, budget=60)
    leaning = Resolver(
        Catalog.load(catalog),
        max_staleness=math.inf,
        default_fairness_quota=1,
        default_scorer="fusion",
        default_rrf_k=5,
    )
    other = tune(leaning, judged, current=plain.trials[0].settings, budget=60)
    assert [t.settings for t in other.trials] == [t.settings for t in plain.trials]
    assert [t.per_query for t in other.trials] == [t.per_query for t in plain.trials]
    # The case that tells them apart: no quota under a fusing strategy.
    assert any(
        t.settings.fairness_quota is None and t.settings.strategy is not Strategy.GROUPED
        for t in plain.trials
    )


@requires_eval_extra
def test_the_current_settings_are_what_the_resolver_runs(tmp_path: Path) -> None:
    """docs/spec.md §14.1: without ``current``, the resolver's settings with
    the defaults it was made with over them — what it ranks by."""
    catalog, qrels = corpus(tmp_path, two_sources=True)
    made = Resolver(
        Catalog.load(catalog),
        max_staleness=math.inf,
        default_scorer="bm25f",
        default_strategy="merged",
    )
    current = current_of(made)
    assert (current.scorer, current.strategy) == (Scorer.BM25F, Strategy.MERGED)
    report = tune(made, JudgedSet.load(qrels), budget=5)
    first = report.trials[0].settings
    assert (first.scorer, first.strategy, first.bm25f) == (
        Scorer.BM25F,
        Strategy.MERGED,
        current.bm25f,
    )
    # Measured on configured(current), it ranks as the resolver does.
    q = "orders"
    assert [p.concept_id for p in made.configured(current).search(q).passages] == [
        p.concept_id for p in made.search(q).passages
    ]
    plain = Resolver(Catalog.load(catalog), max_staleness=math.inf)
    assert current_of(plain) is plain.settings


@requires_eval_extra
def test_ctrl_c_keeps_the_trials_measured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import okfast.tune as tune_module

    catalog, qrels = corpus(tmp_path)
    resolver = Resolver(Catalog.load(catalog), max_staleness=math.inf)
    measured: list[int] = []
    real = tune_module._measure

    def counting(*args: Any) -> Any:
        out = real(*args)
        measured.append(1)
        return out

    def stop(done: int, total: int, best: float) -> None:
        if done == 3:
            raise KeyboardInterrupt

    monkeypatch.setattr(tune_module, "_measure", counting)
    report = tune(resolver, JudgedSet.load(qrels), budget=20, seed=0, progress=stop, workers=1)
    # The three, and those the worker finished or had started meanwhile (it
    # runs ahead of the reading of results, as far as the scheduler lets it):
    # every trial measured is kept.
    assert report.interrupted and 3 <= len(report.trials) == len(measured)


@requires_eval_extra
def test_ctrl_c_decides_on_every_trial_it_waited_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/spec.md §14.1: the trials measured so far are decided on — the
    ones running when the interrupt came too, which the search waits for
    (5 measured, 2 decided on, before)."""
    import threading

    import okfast.tune as tune_module

    catalog, qrels = corpus(tmp_path)
    resolver = Resolver(Catalog.load(catalog), max_staleness=math.inf)
    measured: list[str] = []
    lock = threading.Lock()
    real = tune_module._measure

    def counting(*args: Any) -> Any:
        out = real(*args)
        with lock:
            measured.append(out[0].settings.to_json())
        return out

    monkeypatch.setattr(tune_module, "_measure", counting)

    def stop(done: int, total: int, best: float) -> None:
        if done == 2:
            raise KeyboardInterrupt

    report = tune(resolver, JudgedSet.load(qrels), budget=30, seed=1, progress=stop, workers=2)
    assert report.interrupted
    assert sorted(t.settings.to_json() for t in report.trials) == sorted(measured)
    order = [
        c.to_json() for c in candidates(current_of(resolver), multi_source=False, budget=30, seed=1)
    ]
    got = [t.settings.to_json() for t in report.trials]
    assert got == sorted(got, key=order.index)  # candidate order


def test_bad_arguments_are_refused(tmp_path: Path) -> None:
    catalog, qrels = corpus(tmp_path)
    r = Resolver(Catalog.load(catalog))
    judged = JudgedSet.load(qrels)
    for kwargs, word in (
        ({"objective": "map"}, "objective"),
        ({"budget": 0}, "budget"),
        ({"folds": 1}, "folds"),
        ({"folds": 11}, "11 folds"),
        ({"seed": "x"}, "seed"),
        ({"standard_errors": -1.0}, "standard_errors"),
        ({"standard_errors": math.nan}, "standard_errors"),
        ({"standard_errors": "2"}, "standard_errors"),
        ({"standard_errors": 10**400}, "standard_errors"),  # OverflowError before
    ):
        with pytest.raises(InvalidArgumentError, match=word):
            tune(r, judged, **kwargs)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["tune", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@requires_eval_extra
def test_a_per_query_line_stays_one_line_whatever_its_qid_holds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/spec.md §10.1: each held-out delta is one line, a line break in
    a qid written as ``\\n``."""
    catalog, qrels = corpus(tmp_path)
    qrels.write_text(qrels.read_text().replace('"qid": "q', '"qid": "two\\nq'))
    code, text, _ = run(capsys, "--catalog", str(catalog), "--qrels", str(qrels), "--budget", "10")
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("per query (held out):"))
    shown = list(takewhile(lambda line: line.startswith(("  +", "  -")), lines[at + 1 :]))
    assert code == 0 and int(lines[at].split()[4]) > 0 and shown
    assert all(line.split()[1].startswith("two\\nq") for line in shown)


@requires_eval_extra
def test_the_command_writes_applies_and_reverts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    catalog, qrels = corpus(tmp_path, two_sources=True)
    out = tmp_path / "proposed.json"
    base = ["--catalog", str(catalog), "--qrels", str(qrels), "--budget", "10"]
    code, text, err = run(capsys, *base, "--out", str(out))
    assert (code, err) == (0, "")
    assert "held-out ndcg@10: tuned" in text and "proposed:" in text
    written = Settings.load(out)
    prov: dict[str, Any] = dict(written.provenance or {})
    assert prov["catalog_sha256"].startswith("sha256:") and prov["qrels_sha256"].startswith(
        "sha256:"
    )
    assert prov["after"] >= prov["holdout"] > prov["before"] and prov["configurations"] == 10
    # Of the bytes the judged set was read from (docs/spec.md §14.3).
    assert prov["qrels_sha256"] == "sha256:" + hashlib.sha256(qrels.read_bytes()).hexdigest()
    code, text, _ = run(capsys, *base, "--apply", "--json")
    doc = json.loads(text)
    assert code == 0 and doc["applied"] and doc["proposed"]["scorer"] != "weighted_count"
    applied = Settings.load(tmp_path / "okfast-settings.json")
    assert applied.to_dict() == doc["proposed"]
    # The catalog's settings are now the current ones: eval measures them.
    assert Resolver(Catalog.load(catalog)).default_scorer is applied.scorer
    # A search's option given with --revert is refused, never ignored.
    code, _, err = run(capsys, "--catalog", str(catalog), "--revert", "--apply", "--budget", "3")
    assert code == 2 and "--revert takes no search options (given: --budget, --apply)" in err
    # Given at their default values, they are given all the same.
    code, _, err = run(
        capsys, "--catalog", str(catalog), "--revert", "--budget", "200", "--seed", "0"
    )
    assert code == 2 and "(given: --budget, --seed)" in err
    assert (tmp_path / "okfast-settings.json").exists()
    code, text, _ = run(capsys, "--catalog", str(catalog), "--revert")
    assert code == 0 and "Reverted" in text
    assert not (tmp_path / "okfast-settings.json").exists()
    code, _, err = run(capsys, "--catalog", str(catalog), "--revert")
    assert (
        code == 2 and err.count("\n") == 1 and "nothing" not in err.lower() or "no applied" in err
    )


@requires_eval_extra
def test_the_revert_hint_names_the_catalog_root_the_apply_was_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A catalog kept apart from its bundles (``--catalog-root``, docs/spec.md
    §4.2): the printed revert command is one that works."""
    catalog, qrels = corpus(tmp_path)
    doc = json.loads(catalog.read_text())
    doc["sources"][0]["path"] = "../kb"
    doc["settings"] = "../okfast-settings.json"
    (tmp_path / "conf").mkdir()
    apart = tmp_path / "conf" / "catalog.json"
    apart.write_text(json.dumps(doc))
    within = ["--catalog", str(apart), "--catalog-root", str(tmp_path)]
    code, text, err = run(capsys, *within, "--qrels", str(qrels), "--budget", "10", "--apply")
    assert (code, err) == (0, "") and (tmp_path / "okfast-settings.json").exists()
    hint = text.split("(okfast tune ", 1)[1].split(" --revert undoes it)", 1)[0]
    assert hint.split() == within
    code, text, _ = run(capsys, *hint.split(), "--revert")
    assert code == 0 and "Reverted" in text
    assert not (tmp_path / "okfast-settings.json").exists()


def test_a_revert_prints_json_when_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/spec.md §14.4: `--revert --json` is one object saying which file
    was reverted and whether it is gone (it was refused as a search option)."""
    catalog, _ = corpus(tmp_path)
    target = tmp_path / "okfast-settings.json"
    apply(Settings(scorer=Scorer.BM25F), target)
    apply(Settings(scorer=Scorer.BM25F, rrf_k=5), target)
    code, text, err = run(capsys, "--catalog", str(catalog), "--revert", "--json")
    assert (code, err) == (0, "")
    assert json.loads(text) == {"reverted": True, "settings_file": str(target), "removed": False}
    assert Settings.load(target).rrf_k != 5
    code, text, _ = run(capsys, "--catalog", str(catalog), "--revert", "--json")
    assert code == 0 and json.loads(text)["removed"] is True and not target.exists()


def test_seed_and_margin_are_ascii_numbers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/spec.md §10.1: int() and float() read `1_0` and U+0663 as 10 and 3."""
    catalog, qrels = corpus(tmp_path)
    base = ["--catalog", str(catalog), "--qrels", str(qrels), "--budget", "2"]
    for option, text in (("--seed", "1_0"), ("--seed", "\u0663"), ("--standard-errors", "1_0")):
        with pytest.raises(SystemExit) as exited:
            run(capsys, *base, option, text)
        err = capsys.readouterr().err
        assert exited.value.code == 2 and f"argument {option}: not a" in err, (option, text)


@requires_eval_extra
@pytest.mark.skipif(sys.platform != "linux", reason="a file name that is not UTF-8")
def test_an_out_file_named_in_bytes_that_are_not_utf8_is_written_and_shown_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/spec.md §10.1: `written to FILE` spells a byte of the name that is
    not UTF-8 as its escape, so a strict UTF-8 output (capsys's, a UTF-8
    locale's) takes it: status 0, not a failed write after the file was made."""
    catalog, qrels = corpus(tmp_path)
    out = os.fsdecode(os.fsencode(str(tmp_path)) + b"/p\xff.json")
    base = ["--catalog", str(catalog), "--qrels", str(qrels), "--budget", "6"]
    code, text, err = run(capsys, *base, "--out", out)
    assert (code, err) == (0, "")
    assert f"written to {tmp_path}/p\\udcff.json\n" in text
    assert Settings.load(out).provenance is not None


@requires_eval_extra
def test_the_command_takes_the_margin(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    catalog, qrels = corpus(tmp_path)
    base = ["--catalog", str(catalog), "--qrels", str(qrels), "--budget", "6"]
    code, text, _ = run(capsys, *base, "--standard-errors", "0", "--json")
    assert code == 0 and json.loads(text)["standard_errors"] == 0.0
    code, text, _ = run(capsys, *base, "--out", str(tmp_path / "p.json"))
    assert code == 0 and "more than 2 standard errors" in text
    assert "BM25F's built-in defaults: no configuration measured led them" in text
    assert Settings.load(tmp_path / "p.json").provenance["standard_errors"] == 2.0
    code, _, err = run(capsys, *base, "--standard-errors", "-1")
    assert code == 2 and "standard_errors" in err and err.count("\n") == 1


@requires_eval_extra
def test_apply_needs_a_settings_file_named_by_the_catalog(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Refused before the search, not after it has run."""
    catalog, qrels = corpus(tmp_path)
    doc = json.loads(catalog.read_text())
    del doc["settings"]
    catalog.write_text(json.dumps(doc))

    def no_search(*args: object, **kwargs: object) -> None:
        raise AssertionError("the search ran")

    monkeypatch.setattr("okfast.tune_cli.tune", no_search)
    code, out, err = run(
        capsys, "--catalog", str(catalog), "--qrels", str(qrels), "--budget", "4", "--apply"
    )
    assert code == 2 and "names no settings file" in err and err.count("\n") == 1
    assert out == ""


@requires_eval_extra
def test_the_plot_is_drawn(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib", reason="the plot extra (okfast[plot]) is not installed")
    catalog, qrels = corpus(tmp_path)
    png = tmp_path / "tune.png"
    code, _, _ = run(
        capsys,
        "--catalog",
        str(catalog),
        "--qrels",
        str(qrels),
        "--budget",
        "6",
        "--plot",
        str(png),
    )
    assert code == 0 and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    ("flag", "name", "words"),
    [
        ("--out", ".", "is a directory"),
        ("--plot", ".", "is a directory"),
        # Below a file: no folder can be made there (docs/spec.md §10.1).
        ("--out", "catalog.json/p.json", "catalog.json is not a directory"),
        ("--plot", "catalog.json/t.png", "catalog.json is not a directory"),
        ("--plot", "tune", "must end in one of"),
        ("--plot", "tune.xyz", "must end in one of"),
        # A format matplotlib lists whose writer needs a program (TeX).
        ("--plot", "tune.pgf", "cannot write the plot"),
    ],
)
def test_an_unwritable_out_or_plot_is_refused_before_the_search(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    flag: str,
    name: str,
    words: str,
) -> None:
    if flag == "--plot":
        pytest.importorskip("matplotlib", reason="the plot extra (okfast[plot]) is not installed")
    if name.endswith(".pgf"):
        monkeypatch.setenv("PATH", str(tmp_path))  # no TeX, wherever the suite runs
    catalog, qrels = corpus(tmp_path)

    def no_search(*args: object, **kwargs: object) -> None:
        raise AssertionError("the search ran")

    monkeypatch.setattr("okfast.tune_cli.tune", no_search)
    target = str(tmp_path / name)
    code, out, err = run(capsys, "--catalog", str(catalog), "--qrels", str(qrels), flag, target)
    assert code == 2 and words in err and err.count("\n") == 1 and out == ""
    assert not (tmp_path / "tune.png").exists()


@pytest.mark.parametrize("blocked", ["okfast-settings.json", "okfast-settings.json.history.jsonl"])
def test_an_apply_that_could_not_be_written_is_refused_before_the_search(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    blocked: str,
) -> None:
    """docs/spec.md §14.4: a settings file or history that is a directory
    stopped the command only after the whole search."""
    catalog, qrels = corpus(tmp_path)
    (tmp_path / blocked).mkdir()

    def no_search(*args: object, **kwargs: object) -> None:
        raise AssertionError("the search ran")

    monkeypatch.setattr("okfast.tune_cli.tune", no_search)
    code, out, err = run(capsys, "--catalog", str(catalog), "--qrels", str(qrels), "--apply")
    assert code == 2 and "is a directory" in err and err.count("\n") == 1 and out == ""


@requires_eval_extra
def test_the_judged_sets_problems_are_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    catalog, qrels = corpus(tmp_path)
    with qrels.open("a") as f:
        f.write("{not json\n")
        f.write(json.dumps({"qid": "x", "query": "how do I x", "relevant": {"kb:nope": 1}}) + "\n")
    base = ("--catalog", str(catalog), "--qrels", str(qrels), "--budget", "4")
    code, out, _ = run(capsys, *base)
    assert code == 0
    table = out.split("\nDiagnostics:\n")[1].splitlines()
    assert table[0].split()[:2] == ["error", "BadJudgedLine"] and "q.jsonl:11" in table[0]
    assert any("UnknownDocId" in line and "kb:nope" in line for line in table)
    code, out, _ = run(capsys, *base, "--json")
    codes = [d["code"] for d in json.loads(out)["diagnostics"]]
    assert code == 0 and codes[0] == "BadJudgedLine" and "UnknownDocId" in codes


@requires_eval_extra
def test_the_provenance_names_the_catalog_that_was_measured(tmp_path: Path) -> None:
    """A catalog file changed during the search does not change what the
    provenance says was measured (docs/spec.md §14.3)."""
    catalog, qrels = corpus(tmp_path)
    measured = catalog.read_bytes()
    cat = Catalog.load(catalog)
    report = tune(Resolver(cat, max_staleness=math.inf), JudgedSet.load(qrels), budget=4)
    catalog.write_text(catalog.read_text() + "\n")
    prov = with_provenance(report, catalog=cat, qrels=None).provenance or {}
    assert prov["catalog_sha256"] == "sha256:" + hashlib.sha256(measured).hexdigest()
    by_path = with_provenance(report, catalog=catalog, qrels=None).provenance or {}
    assert by_path["catalog_sha256"] != prov["catalog_sha256"]


@requires_eval_extra
def test_the_provenance_of_trec_input_covers_the_queries_file(tmp_path: Path) -> None:
    """docs/spec.md §14.3: with TREC qrels the query texts are in their own
    file, whose digest the provenance carries too (changed texts, other
    measurements)."""
    catalog, qrels = corpus(tmp_path)
    rows = [json.loads(line) for line in qrels.read_text().splitlines() if line.strip()]
    trec, tsv = tmp_path / "q.qrels", tmp_path / "q.tsv"
    trec.write_text(
        "".join(f"{r['qid']} 0 {d} {g}\n" for r in rows for d, g in r["relevant"].items())
    )
    tsv.write_text("".join(f"{r['qid']}\t{r['query']}\n" for r in rows))
    judged = JudgedSet.load(trec, tsv)
    report = tune(Resolver(Catalog.load(catalog)), judged, budget=2)
    prov = with_provenance(report, catalog=catalog, qrels=judged).provenance or {}
    digest = {p: "sha256:" + hashlib.sha256(p.read_bytes()).hexdigest() for p in (trec, tsv)}
    assert (prov["qrels_sha256"], prov["queries_sha256"]) == (digest[trec], digest[tsv])
    jsonl = with_provenance(report, catalog=catalog, qrels=JudgedSet.load(qrels)).provenance
    assert jsonl is not None and "queries_sha256" not in jsonl


@given(
    st.lists(
        st.lists(st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0]), min_size=10, max_size=10),
        min_size=3,
        max_size=3,
    )
)
@example(
    [
        [0.5, 0.5, 0.5, 0.0, 0.5, 0.75, 0.75, 0.5, 0.5, 0.75],  # current: 0.525
        [0.75, 0.25, 0.5, 0.0, 1.0, 0.25, 0.5, 0.25, 1.0, 0.25],  # BM25F defaults: 0.475
        [0.5, 1.0, 1.0, 1.0, 0.75, 0.75, 0.75, 0.75, 0.5, 0.75],  # best: 0.775
    ]
)
def test_the_choice_never_scores_below_the_current_settings(values: list[list[float]]) -> None:
    """docs/spec.md §14.2: an anchor below the current settings is passed
    over, so neither a fold's choice nor the proposal is below them on the
    queries it was chosen on (a noisy anchor used to pass the margin)."""
    queries = [JudgedQuery(f"q{i}", "t", {"d": 1}) for i in range(10)]
    configs = [Settings(), Settings(scorer=Scorer.BM25F), Settings(scorer=Scorer.FUSION)]
    trials = [Trial(c, tuple(v)) for c, v in zip(configs, values, strict=True)]
    for qs in (range(10), [i for i in range(10) if i % 5 != 0]):
        chosen = _choose(trials, qs, [0, 1], 2.0)
        assert trials[chosen].mean_over(qs) >= trials[0].mean_over(qs)
    report = _decide(
        queries, trials, "ndcg@10", 5, 0, 3, 3, False, anchored=[0, 1], standard_errors=2.0
    )
    if report.proposed is not None:
        assert trials[report.proposed].mean > trials[0].mean


@requires_eval_extra
def test_every_trial_measures_one_corpus_though_the_bundle_changes(tmp_path: Path) -> None:
    """docs/spec.md §14.1: the snapshots every trial reads (each analyzer
    language too) are loaded before the first; an edit while tune runs
    changes no trial."""
    from okfast.evaluation import evaluate

    words = ["lamination", "proofing", "scoring", "retarding", "glazing"]
    page = "---\ntype: T\ntitle: {t}\n---\nabout {t}\n"
    write_bundle(tmp_path / "docs", {f"{w}.md": page.format(t=w) for w in words})
    (tmp_path / "catalog.json").write_text(
        json.dumps({"version": 1, "sources": [{"id": "docs", "path": "docs"}]})
    )
    lines = [json.dumps({"qid": w, "query": w, "relevant": {w: 1}}) for w in words]
    (tmp_path / "q.jsonl").write_text("\n".join(lines) + "\n")
    judged = JudgedSet.load(tmp_path / "q.jsonl")
    r = Resolver(Catalog.load(tmp_path / "catalog.json"), max_staleness=math.inf)

    def edit(done: int, total: int, best: float) -> None:
        if done == 1:
            for w in words:
                (tmp_path / "docs" / f"{w}.md").write_text(page.format(t="other"))

    report = tune(r, judged, budget=6, workers=1, progress=edit)
    assert {t.mean for t in report.trials} == {1.0}
    # The corpus did change: a refreshing evaluate sees it; one that does
    # not reads the snapshots as they are (how eval compares with a baseline).
    assert evaluate(r, judged, refresh=False).metrics["ndcg@10"] == 1.0
    assert evaluate(r, judged).metrics["ndcg@10"] == 0.0


@requires_eval_extra
def test_numpy_integers_are_whole_numbers_for_tune_and_evaluate(tmp_path: Path) -> None:
    # docs/spec.md §5.1: numpy's integers are whole numbers everywhere.
    import numpy as np
    from okfast.evaluation import evaluate

    write_bundle(
        tmp_path / "docs", {f"{w}.md": f"---\ntype: T\ntitle: {w}\n---\n{w}\n" for w in "abc"}
    )
    (tmp_path / "catalog.json").write_text(
        json.dumps({"version": 1, "sources": [{"id": "docs", "path": "docs"}]})
    )
    lines = [json.dumps({"qid": w, "query": w, "relevant": {w: 1}}) for w in "abc"]
    (tmp_path / "q.jsonl").write_text("\n".join(lines) + "\n")
    judged = JudgedSet.load(tmp_path / "q.jsonl")
    r = Resolver(Catalog.load(tmp_path / "catalog.json"))
    report = evaluate(r, judged, depth=np.int64(10), workers=np.int32(1))
    assert report.depth == 10 and type(report.depth) is int
    t = tune(r, judged, budget=np.int64(3), folds=np.int64(2), seed=np.int64(1), workers=np.int8(1))
    assert (t.budget, t.seed) == (3, 1) and type(t.seed) is int
    with pytest.raises(InvalidArgumentError, match="budget must be a whole number >= 1"):
        tune(r, judged, budget=np.float64(3))


def test_a_search_stopped_short_ends_its_progress_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # docs/spec.md §14.5: after Ctrl-C the report starts on a line of its own.
    from okfast.tune_cli import _Bar

    bar = _Bar()
    bar(1, 3, 0.5)
    bar.end()
    bar.end()  # once only
    err = capsys.readouterr().err
    assert err.startswith("\rtune [") and err.endswith("s\n") and err.count("\n") == 1
    bar(3, 3, 0.5)
    bar.end()
    assert capsys.readouterr().err.count("\n") == 1  # the full bar ended its line itself
