"""``okfast tune --plot``: each configuration's train and holdout objective
on the first fold (docs/spec.md §14.5), the current and the proposed marked.
matplotlib is the ``okfast[plot]`` extra, imported only when a plot is drawn."""

from __future__ import annotations

import io
import os
from pathlib import Path

from okfast.errors import InvalidArgumentError, MissingDependencyError
from okfast.paths import writable
from okfast.tune import TuneReport


def plot(report: TuneReport, path: str | os.PathLike[str]) -> None:
    """Draw ``report`` to ``path`` (any format matplotlib writes, by suffix;
    :func:`check_plot_path`)."""
    check_plot_path(path)
    import matplotlib

    matplotlib.use("Agg")  # a file, never a window
    import matplotlib.pyplot as plt

    fold = report.folds[0]
    held = list(fold.queries)
    train = [i for i in range(len(report.qids)) if i not in set(held)]
    xs = [t.mean_over(train) for t in report.trials]
    ys = [t.mean_over(held) for t in report.trials]
    fig, ax = plt.subplots(figsize=(6.4, 5.2))
    ax.scatter(xs, ys, s=12, alpha=0.5, color="tab:gray", label="configurations")
    ax.scatter(xs[0], ys[0], s=70, color="tab:blue", marker="s", label="current")
    if report.proposed is not None:
        p = report.proposed
        ax.scatter(xs[p], ys[p], s=110, color="tab:red", marker="*", label="proposed")
    low = min(xs + ys)
    ax.plot([low, 1], [low, 1], lw=0.8, color="black", alpha=0.3)
    ax.set_xlabel(f"{report.objective}, training queries ({len(train)})")
    ax.set_ylabel(f"{report.objective}, held-out queries ({len(held)}, fold 1)")
    ax.set_title(f"okfast tune: {len(report.trials)} configurations")
    ax.legend(loc="lower right")
    fig.tight_layout()
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(os.fspath(path))
    except (OSError, ValueError, RuntimeError) as e:
        # RuntimeError: a format whose writer needs a program (pgf: a TeX).
        why = e.strerror if isinstance(e, OSError) else None
        raise InvalidArgumentError(f"cannot write the plot {path}: {why or e}") from None
    finally:
        plt.close(fig)


def check_plot_path(path: str | os.PathLike[str]) -> None:
    """What would stop a plot after the search, checked before it: matplotlib
    installed, ``path`` not a directory, its suffix a format matplotlib
    writes (so it never picks one the caller did not name)."""
    require_plot()
    from matplotlib.backend_bases import FigureCanvasBase

    p = Path(path)
    writable("the plot", p)
    formats = FigureCanvasBase.get_supported_filetypes()
    suffix = p.suffix.lower().removeprefix(".")
    if suffix not in formats:
        raise InvalidArgumentError(
            f"the plot {p} must end in one of "
            + ", ".join(f".{f}" for f in sorted(formats))
            + " (its format)"
        )
    # A format matplotlib lists may still need a program it does not ship
    # (pgf a TeX install): a small figure is drawn in memory to find out.
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(1, 1))
    fig.text(0.5, 0.5, "okfast")  # text too: pgf measures it with TeX
    try:
        fig.savefig(io.BytesIO(), format=suffix)
    except (OSError, ValueError, RuntimeError) as e:
        raise InvalidArgumentError(f"cannot write the plot {p}: {e}") from None
    finally:
        plt.close(fig)


def require_plot() -> None:
    """matplotlib, or a :class:`~okfast.errors.MissingDependencyError` naming the extra."""
    try:
        import matplotlib  # noqa: F401
    except ImportError as e:
        raise MissingDependencyError(
            f"--plot needs matplotlib, from the plot extra: pip install 'okfast[plot]' ({e})"
        ) from None
