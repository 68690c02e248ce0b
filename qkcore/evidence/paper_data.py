"""The paper's released tables: discover, validate and load them (never copied into the repo).

Layout of a paper-data folder (its NOTICE.md)::

    <model>_head_full.parquet          one row per head (layer, head): metrics, behaviour, ...
    <model>_ckpt_summary.parquet       checkpoint series of a model (step, ...)
    <model>_ckpt_analysis.parquet      checkpoint series of a model (step, ...)
    <model>_kernel_curves.parquet      relative-position kernels (fig, head, offset, score)
    trainB/<scheme>_<constraint>_lam<lambda>_seed<s>.parquet   one constrained training run

Everything is discovered from the file names present: a new model or run needs no code change.
Columns are checked against what every table of its kind must carry (dtype-kind included); a
table may carry more. A malformed file raises :class:`~qkcore.errors.QKError` naming the file
and the column.

Example::

    data = PaperData.discover("../shared/paper-data")
    data.models                     # ('bloom-1b1', 'gpt-neo-1.3b', 'gpt2', ...)
    table = data.head_table("gpt2") # DataFrame, 144 rows
    data.runs()                     # [TrainingRun(scheme="ape", constraint="free", ...), ...]
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from qkcore.errors import QKError

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "PAPER_DATA_ENV",
    "PaperData",
    "TrainingRun",
    "model_scheme",
    "resolve_paper_data",
]

PAPER_DATA_ENV = "QK_PAPER_DATA"

# Columns every table of a kind must have, with the numpy dtype kind ('i' int, 'f' float,
# 'O'/'U'/'T' text) each must be.
_REQUIRED = {
    "head_full": {"layer": "i", "head": "i", "dir_frac": "f", "D_head": "f", "prev": "f"},
    "ckpt_summary": {"step": "if"},
    "ckpt_analysis": {"step": "if"},
    "kernel_curves": {"fig": "OUT", "head": "OUT", "offset": "i", "score": "f"},
    "run": {"step": "i", "ce_pred": "f", "prev_best": "f", "ind_best": "f"},
}
#: The order the loader puts each kind of table in (a claim may rely on it; file order is not)
_ORDER: dict[str, tuple[str, ...]] = {
    "head_full": ("layer", "head"),
    "ckpt_summary": ("step",),
    "ckpt_analysis": ("step",),
    "run": ("step",),
}
_TABLE_RE = re.compile(
    r"^(?P<model>.+)_(?P<kind>head_full|ckpt_summary|ckpt_analysis|kernel_curves)\.parquet$"
)
_RUN_RE = re.compile(
    r"^(?P<scheme>[a-z]+)_(?P<constraint>[a-z]+)_lam(?P<lam>[0-9.]+)_seed(?P<seed>\d+)\.parquet$"
)

# Positional scheme of the paper's models (its §4 list). A model not listed here is classified
# by its name family, then by its columns (RoPE phase features), else 'unknown'.
_SCHEME_BY_FAMILY = (
    ("gpt2", "ape"),
    ("opt-", "ape"),
    ("gpt-neo", "ape"),
    ("bloom", "alibi"),
    ("pythia", "rope-partial"),
    ("llama", "rope"),
    ("smollm", "rope"),
    ("minilm", "ape"),
)


def model_scheme(model: str, columns: list[str] | None = None) -> str:
    """Positional scheme tag of a model name: ape, alibi, rope, rope-partial or unknown."""
    name = model.lower()
    for prefix, scheme in _SCHEME_BY_FAMILY:
        if name.startswith(prefix):
            return scheme
    if columns is not None and "rope_imag_frac" in columns:
        return "rope"
    return "unknown"


def resolve_paper_data(option: str | None = None) -> Path | None:
    """The paper-data folder from an explicit option, else ``$QK_PAPER_DATA``; None if unset.

    Raises QKError when a location is given but is not a folder.
    """
    location = option or os.environ.get(PAPER_DATA_ENV)
    if not location:
        return None
    path = Path(location).expanduser().resolve()
    if not path.is_dir():
        source = "--claims-paper-data" if option else f"${PAPER_DATA_ENV}"
        raise QKError(
            f"paper data folder {path} (from {source}) does not exist. Point {source} at the "
            "folder holding <model>_head_full.parquet files (e.g. ../shared/paper-data)."
        )
    return path


@dataclass(frozen=True)
class TrainingRun:
    """One constrained-training run of the §10 grid, identified by its file name."""

    scheme: str
    constraint: str
    lam: float
    seed: int
    path: Path

    @property
    def arm(self) -> str:
        """``<scheme>-<constraint>`` (e.g. ``rope-imag``)."""
        return f"{self.scheme}-{self.constraint}"


def _check_columns(frame: pd.DataFrame, kind: str, path: Path) -> pd.DataFrame:
    for column, kinds in _REQUIRED[kind].items():
        if column not in frame.columns:
            raise QKError(
                f"{path}: required column '{column}' is missing (a {kind} table needs "
                f"{sorted(_REQUIRED[kind])}). The file is malformed or of another layout."
            )
        if frame[column].dtype.kind not in kinds:
            raise QKError(
                f"{path}: column '{column}' has dtype {frame[column].dtype}, expected "
                f"{'integer' if kinds == 'i' else 'float' if kinds == 'f' else kinds}."
            )
    return frame


@cache
def _read(path: Path, kind: str) -> pd.DataFrame:
    import pandas as pd  # on the first table read: the plugin resolves the folder light

    try:
        frame = pd.read_parquet(path)
    except Exception as exc:  # pyarrow raises several types for a damaged file
        raise QKError(
            f"{path} cannot be read as parquet ({type(exc).__name__}: {exc}). "
            "Replace it with an intact copy of the released table."
        ) from None
    return _check_columns(frame, kind, path)


@dataclass(frozen=True)
class PaperData:
    """A discovered paper-data folder."""

    root: Path

    @classmethod
    def discover(cls, root: str | os.PathLike) -> PaperData:
        path = Path(root)
        if not path.is_dir():
            raise QKError(f"paper data folder {path} does not exist.")
        return cls(path.resolve())

    def _tables(self, kind: str) -> dict[str, Path]:
        found = {}
        for path in sorted(self.root.glob("*.parquet")):
            match = _TABLE_RE.match(path.name)
            if match and match["kind"] == kind:
                found[match["model"]] = path
        return found

    @property
    def models(self) -> tuple[str, ...]:
        """Models with a per-head table."""
        return tuple(self._tables("head_full"))

    @property
    def checkpoint_models(self) -> tuple[str, ...]:
        """Models with a checkpoint series (summary or analysis)."""
        return tuple(sorted(set(self._tables("ckpt_summary")) | set(self._tables("ckpt_analysis"))))

    def _table(self, kind: str, key: str, path: Path) -> pd.DataFrame:
        """A table as read (:meth:`_as_read`), put in its kind's order, then
        :meth:`_as_loaded`: the two places a copy of the data may differ from the files."""
        frame = self._as_read(kind, key, _read(path, kind))
        order = _ORDER.get(kind)
        if order:
            frame = frame.sort_values(list(order), kind="stable").reset_index(drop=True)
        return self._as_loaded(kind, key, frame)

    def _as_read(self, kind: str, key: str, frame: pd.DataFrame) -> pd.DataFrame:
        """The table as its file holds it (a subclass may change its rows' order)."""
        return frame

    def _as_loaded(self, kind: str, key: str, frame: pd.DataFrame) -> pd.DataFrame:
        """The table as the claims read it (a subclass may mutate it)."""
        return frame

    def head_table(self, model: str) -> pd.DataFrame:
        """The per-head table of ``model``, sorted by (layer, head)."""
        return self._table("head_full", model, self._path("head_full", model))

    def checkpoint_table(self, model: str, kind: str = "ckpt_analysis") -> pd.DataFrame:
        """A checkpoint series (``ckpt_analysis`` or ``ckpt_summary``) sorted by step."""
        return self._table(kind, model, self._path(kind, model))

    def kernel_curves(self, model: str) -> pd.DataFrame:
        """Relative-position kernels, in the file's row order (no order is defined for them)."""
        return self._table("kernel_curves", model, self._path("kernel_curves", model))

    def scheme(self, model: str) -> str:
        """The model's scheme; from its name alone when its table cannot be read (the table's
        own tests then report why)."""
        try:
            columns = list(self.head_table(model).columns)
        except QKError:
            columns = None
        return model_scheme(model, columns)

    def problem(self, model: str) -> str:
        """Why ``model``'s per-head table cannot be used ("" when it can)."""
        try:
            self.head_table(model)
        except QKError as exc:
            return str(exc)
        return ""

    def has_table(self, kind: str, model: str) -> bool:
        """Whether a ``<model>_<kind>.parquet`` is present (readable or not)."""
        return model in self._tables(kind)

    def checkpoint_problem(self, model: str) -> str:
        """Why ``model``'s checkpoint series cannot be read as a history ("" when it can): a
        table present but unreadable. A series with fewer columns is readable; the claims that
        need what it lacks say so themselves."""
        try:
            for kind in ("ckpt_analysis", "ckpt_summary"):
                if self.has_table(kind, model):
                    self.checkpoint_table(kind=kind, model=model)
        except QKError as exc:
            return str(exc)
        return ""

    def unrecognised(self) -> tuple[Path, ...]:
        """Files present that no table kind claims (reported, never read): a later release's
        extra files, notes, or misnamed tables."""
        known = set(self._all_tables().values()) | {run.path for run in self.runs()}
        return tuple(
            path
            for path in sorted(self.root.rglob("*"))
            if path.is_file() and path not in known and path.name != "NOTICE.md"
        )

    def _all_tables(self) -> dict[tuple[str, str], Path]:
        return {
            (kind, model): path
            for kind in _REQUIRED
            if kind != "run"
            for model, path in self._tables(kind).items()
        }

    def runs(self) -> list[TrainingRun]:
        """Every training run under ``trainB/`` whose file name parses (file-name order);
        others are left to :meth:`unrecognised`."""
        runs = []
        for path in sorted((self.root / "trainB").glob("*.parquet")):
            match = _RUN_RE.match(path.name)
            if match is None:
                continue
            runs.append(
                TrainingRun(
                    scheme=match["scheme"],
                    constraint=match["constraint"],
                    lam=float(match["lam"].rstrip(".")),
                    seed=int(match["seed"]),
                    path=path,
                )
            )
        return runs

    def run_table(self, run: TrainingRun) -> pd.DataFrame:
        """One §10 training run, sorted by step."""
        return self._table("run", run.path.stem, run.path)

    def _path(self, kind: str, model: str) -> Path:
        tables = self._tables(kind)
        if model not in tables:
            raise QKError(
                f"no {kind} table for model '{model}' in {self.root}; "
                f"available: {', '.join(tables) or 'none'}."
            )
        return tables[model]
