"""``capture`` (SPEC §6.4): the exact section, text that can never become
structure, and no lost or torn exchange with many writers or a killed one."""

from __future__ import annotations

import random
import re
import signal
import subprocess
import sys
import threading
from datetime import datetime, timedelta, timezone, tzinfo
from pathlib import Path

import okfast
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from okfast.bundle import read_concept
from okfast.memory import FileMemoryStore, Scope, Tier, capture, memory_path
from okfast.memory.capture import quote

NOW = datetime(2026, 11, 30, 9, 5, 7, tzinfo=timezone.utc)
DAY = "2026-11-30"
SCOPE = Scope("acme", "alice")
HEADER = re.compile(r"^## (\d\d:\d\d:\d\d) UTC$", re.M)


def make_store(base: Path) -> FileMemoryStore:
    for t in Tier:
        (base / t.value).mkdir(parents=True, exist_ok=True)
    return FileMemoryStore({t: base / t.value for t in Tier})


def day_file(base: Path, scope: Scope = SCOPE, tier: Tier = Tier.USER) -> Path:
    return base / tier.value / memory_path(tier, scope) / f"{DAY}.md"


def load_day(base: Path) -> okfast.Concept:
    """The day concept as every reader sees it; fails if it does not parse."""
    data = day_file(base).read_bytes()
    concept, diags = read_concept(f"{DAY}.md", data)
    assert concept is not None and not [d for d in diags if d.severity == "error"], diags
    return okfast.Bundle.load(day_file(base).parent).concept(DAY)


def sections(body: str) -> list[tuple[str, str, str]]:
    """``(time, user, agent)`` per section, decoded; asserts each is intact."""
    out = []
    body += "\n"  # the reader drops the final line break (SPEC §1.3 lines)
    starts = [m.start() for m in HEADER.finditer(body)]
    assert body[: starts[0]] == "" if starts else True
    for a, b in zip(starts, starts[1:] + [len(body)], strict=True):
        chunk = body[a:b]
        m = re.fullmatch(
            r"## (\d\d:\d\d:\d\d) UTC\n\n\*\*User:\*\*\n((?:> .*\n)+|\(none\)\n)\n"
            r"\*\*Agent:\*\*\n((?:> .*\n)+|\(none\)\n)\n?",
            chunk,
        )
        assert m, f"torn or altered section: {chunk!r}"
        out.append((m.group(1), _unquote(m.group(2)), _unquote(m.group(3))))
    return out


def _unquote(block: str) -> str:
    if block == "(none)\n":
        return ""
    return "\n".join(line[2:] for line in block.rstrip("\n").split("\n"))


def test_the_exact_file_format(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    assert capture(store, SCOPE, "Where is\nthe oven?", "Back room.", now=NOW).written
    assert capture(store, SCOPE, "", "x\r\ny", now=NOW + timedelta(seconds=1)).written
    assert day_file(tmp_path).read_text() == (
        "---\n"
        'type: "AgentMemory"\n'
        'title: "Agent memory 2026-11-30"\n'
        'description: "Captured user/agent exchanges for 2026-11-30."\n'
        "generated:\n"
        f'  by: "okfast/{okfast.__version__}"\n'
        '  at: "2026-11-30T09:05:07Z"\n'
        "---\n"
        "\n"
        "## 09:05:07 UTC\n\n**User:**\n> Where is\n> the oven?\n\n**Agent:**\n> Back room.\n"
        "\n"
        "## 09:05:08 UTC\n\n**User:**\n(none)\n\n**Agent:**\n> x\n> y\n"
    )
    c = load_day(tmp_path)
    assert (c.type, c.title, c.description) == (
        "AgentMemory",
        "Agent memory 2026-11-30",
        "Captured user/agent exchanges for 2026-11-30.",
    )
    assert c.generated == okfast.Actor(f"okfast/{okfast.__version__}", "2026-11-30T09:05:07Z")


def test_quote_rules() -> None:
    assert quote("") == "(none)"
    assert quote("a\x00b") == "> a\ufffdb"
    assert quote("lone \ud800 surrogate") == "> lone \ufffd surrogate"
    assert quote("a\rb\u2028c\x85d") == "> a\n> b\n> c\n> d"
    assert quote("\n") == "> "
    with pytest.raises(TypeError):
        quote(None)  # type: ignore[arg-type]


def test_day_is_the_utc_day(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    late = datetime(2026, 11, 30, 23, 30, tzinfo=timezone(timedelta(hours=-5)))
    r = capture(store, SCOPE, "q", "a", now=late)
    assert r.concept_id is not None and r.concept_id.endswith("/2026-12-01")
    with pytest.raises(ValueError, match="timezone-aware"):
        capture(store, SCOPE, "q", "a", now=datetime(2026, 1, 1))
    for wrong in ("2026-01-01", 1_700_000_000):
        with pytest.raises(TypeError, match="timezone-aware datetime"):
            capture(store, SCOPE, "q", "a", now=wrong)  # type: ignore[arg-type]


HOSTILE = st.lists(
    st.sampled_from(
        [
            "---",
            "# heading",
            "## 00:00:00 UTC",
            "**Agent:**",
            "title: x",
            "> q",
            "",
            " ",
            "\r",
            "\x00",
        ]
    )
    | st.text(max_size=20),
    max_size=6,
).map(lambda parts: random.Random(len(parts)).choice(["\n", "\r\n", "\r", "\u2028"]).join(parts))


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.tuples(HOSTILE, HOSTILE), min_size=1, max_size=4))
def test_captured_text_never_changes_the_structure(
    tmp_path_factory: pytest.TempPathFactory, exchanges: list[tuple[str, str]]
) -> None:
    base = tmp_path_factory.mktemp("cap")
    store = make_store(base)
    for i, (u, a) in enumerate(exchanges):
        assert capture(store, SCOPE, u, a, now=NOW + timedelta(seconds=i)).written
    c = load_day(base)
    assert c.title == f"Agent memory {DAY}" and c.type == "AgentMemory"
    assert set(c.frontmatter) == {"type", "title", "description", "generated"}

    def norm(t: str) -> str:
        return "\n".join(t.replace("\x00", "\ufffd").splitlines())

    got = sections(c.body)
    assert [(u, a) for _t, u, a in got] == [(norm(u), norm(a)) for u, a in exchanges]


# -- many writers -----------------------------------------------------------------

WRITER = r"""
import sys
from datetime import datetime, timezone
from okfast.memory import FileMemoryStore, Scope, Tier, capture
base, who, start, count = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
store = FileMemoryStore({t: f"{base}/{t.value}" for t in Tier})
now = datetime(2026, 11, 30, 9, 5, 7, tzinfo=timezone.utc)
print("ready", flush=True)
k = start
while count < 0 or k < start + count:
    r = capture(store, Scope("acme", "alice"), f"question {who}-{k}\n---\n# not a heading",
                f"answer {who}-{k}", now=now)
    if not r.written:
        print("error", r.error, flush=True)
        sys.exit(1)
    print("ok", k, flush=True)
    k += 1
"""


def _spawn(base: Path, who: str, start: int, count: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(base), who, str(start), str(count)],
        stdout=subprocess.PIPE,
        text=True,
    )


def _who_k(got: list[tuple[str, str, str]]) -> list[str]:
    out = []
    for _t, u, a in got:
        m = re.fullmatch(r"question (\S+)\n---\n# not a heading", u)
        assert m and a == f"answer {m.group(1)}", (u, a)
        out.append(m.group(1))
    return out


def test_eight_processes_lose_nothing(tmp_path: Path) -> None:
    make_store(tmp_path)
    procs = [_spawn(tmp_path, f"p{i}", 0, 50) for i in range(8)]
    for p in procs:
        out, _ = p.communicate(timeout=300)
        assert p.returncode == 0, out
    got = _who_k(sections(load_day(tmp_path).body))
    assert len(got) == 400
    assert sorted(got) == sorted(f"p{i}-{k}" for i in range(8) for k in range(50))
    for i in range(8):  # each writer's own appends stay in its order
        mine = [int(x.split("-")[1]) for x in got if x.startswith(f"p{i}-")]
        assert mine == list(range(50))


def test_sixteen_threads_lose_nothing(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    errors: list[str] = []

    def run(i: int) -> None:
        for k in range(50):
            r = capture(
                store,
                SCOPE,
                f"question t{i}-{k}\n---\n# not a heading",
                f"answer t{i}-{k}",
                now=NOW,
            )
            if not r.written:
                errors.append(r.error or "?")

    threads = [threading.Thread(target=run, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    got = _who_k(sections(load_day(tmp_path).body))
    assert sorted(got) == sorted(f"t{i}-{k}" for i in range(16) for k in range(50))


def test_a_killed_writer_loses_nothing_it_reported(tmp_path: Path) -> None:
    make_store(tmp_path)
    rng = random.Random(20261130)
    reported: list[str] = []
    start = 0
    for _round in range(6):
        p = _spawn(tmp_path, "k", start, -1)
        assert p.stdout is not None
        assert p.stdout.readline() == "ready\n"
        threading.Event().wait(rng.uniform(0.0, 0.25))
        p.send_signal(signal.SIGKILL)
        out, _ = p.communicate(timeout=60)
        lines = [ln for ln in out.split("\n")[:-1] if ln.startswith("ok ")]
        reported += [f"k-{ln.split()[1]}" for ln in lines]
        if lines:
            start = int(lines[-1].split()[1]) + 1
        if day_file(tmp_path).exists():
            on_disk = _who_k(sections(load_day(tmp_path).body))
            assert set(reported) <= set(on_disk)
            # A capture on disk but killed before it was reported may appear
            # once more when the next round starts at the same number.
            start = max(start, 1 + max(int(x.split("-")[1]) for x in on_disk))
    assert reported, "the writer never got to write; the test proved nothing"
    # What a killed writer left behind is invisible to readers and swept by the next write.
    store = make_store(tmp_path)
    assert capture(store, SCOPE, "after", "crash", now=NOW).written
    leftovers = [p.name for p in day_file(tmp_path).parent.iterdir() if ".tmp-" in p.name]
    assert leftovers == []


@pytest.mark.parametrize("wrong", [0, "", False, 0.0, b""])
def test_a_falsy_now_is_refused_not_replaced_by_the_clock(tmp_path: Path, wrong: object) -> None:
    # Only None means "the current time" (docs/spec.md §6.4).
    store = make_store(tmp_path)
    with pytest.raises(okfast.InvalidArgumentTypeError, match="timezone-aware datetime"):
        capture(store, SCOPE, "hi", "there", now=wrong)  # type: ignore[arg-type]
    assert not (tmp_path / "user" / "memory-user").exists()


@pytest.mark.parametrize(
    "now",
    [
        datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=5))),
        datetime(9999, 12, 31, 23, tzinfo=timezone(timedelta(hours=-5))),
    ],
)
def test_a_now_without_a_utc_day_is_an_argument_error(tmp_path: Path, now: datetime) -> None:
    store = make_store(tmp_path)
    with pytest.raises(okfast.InvalidArgumentError, match="out of range"):
        capture(store, SCOPE, "hi", "there", now=now)
    assert not (tmp_path / "user" / "memory-user").exists()


def test_a_now_whose_zone_gives_no_offset_is_naive(tmp_path: Path) -> None:
    class NoOffset(tzinfo):
        def utcoffset(self, dt: datetime | None) -> timedelta | None:
            return None

        def dst(self, dt: datetime | None) -> timedelta | None:
            return None

        def tzname(self, dt: datetime | None) -> str | None:
            return None

    store = make_store(tmp_path)
    with pytest.raises(okfast.InvalidArgumentError, match="timezone-aware"):
        capture(store, SCOPE, "hi", "there", now=datetime(2026, 1, 1, tzinfo=NoOffset()))
