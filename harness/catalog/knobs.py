"""The hashers' knobs, as the hashers describe them (`--knobs-json`, generated from hashers/knobs.h).

The config schema, the commands' argv and labels, the runs.csv columns, tune's space and the
docs' knob table are built from this table, so a knob is declared once, in C. The table is read
from the built binaries of `build/bin` (or $RINGSUM_BIN_DIR): every variant is asked, which also
says which variants act on each knob.
"""

from __future__ import annotations

import functools
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.catalog import variants
from harness.catalog.variants import default_bin_dir
from harness import config_values
from harness.units import format_size

# Knobs that baselines share (dd's block size, fio's depth and O_DIRECT): runs.csv columns of
# their own, filled for every tool; the other knobs are the hashers' alone.
SHARED = ("block_size", "queue_depth", "buffers", "direct")


class KnobsError(Exception):
    """The knob table cannot be read: the message says which binary and why."""


@dataclass(frozen=True)
class Knob:
    name: str  # config key, runs.csv column, struct knobs field
    option: str  # --block-size
    short: str | None
    type: str  # "size", "count", "buffers" or "flag"
    default: Any  # the article's: what a config gets when it does not say
    min: int
    max: int
    label: str  # its word in a command label (before "=" for numbers)
    positional: int  # its place among the article's seven numbers, 0 for none
    needs: str
    help: str
    variants: tuple[str, ...]  # the variants that act on it
    variant_defaults: tuple[tuple[str, Any], ...] = ()  # variants whose own default differs
    wisdom: tuple[str, ...] = ()  # the kinds of work whose wisdom records may choose it (hashers/wisdom.c)

    @property
    def is_flag(self) -> bool:
        return self.type == "flag"


@dataclass(frozen=True)
class KnobTable:
    knobs: tuple[Knob, ...]

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.knobs)

    def __getitem__(self, name: str) -> Knob:
        return next(k for k in self.knobs if k.name == name)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(k.name for k in self.knobs)

    @property
    def flags(self) -> tuple[Knob, ...]:
        return tuple(k for k in self.knobs if k.is_flag)

    @property
    def own(self) -> tuple[str, ...]:
        """The hashers' own knobs: the runs.csv columns after the shared ones."""
        return tuple(k.name for k in self.knobs if k.name not in SHARED)


@functools.cache
def _load(bin_dir: Path) -> KnobTable:
    try:
        described = variants.described(bin_dir)
    except variants.VariantsError as e:
        raise KnobsError(str(e)) from None
    first = next(iter(described.values()))["knobs"]
    shape = [{k: v for k, v in row.items() if k not in ("used", "variant_default")} for row in first]
    for variant, data in described.items():
        if [{k: v for k, v in row.items() if k not in ("used", "variant_default")} for row in data["knobs"]] != shape:
            raise KnobsError(f"{bin_dir / variant}: its knob table differs from the other variants' (make all)")
    knobs = []
    for i, row in enumerate(first):
        users = tuple(v for v, data in described.items() if data["knobs"][i]["used"])
        own = tuple((v, data["knobs"][i]["variant_default"]) for v, data in described.items()
                    if data["knobs"][i]["variant_default"] != row["default"])
        knobs.append(Knob(name=row["name"], option=row["option"], short=row["short"], type=row["type"],
                          default=row["default"], min=row["min"], max=row["max"], label=row["label"],
                          positional=row["positional"], needs=row["needs"], help=row["help"], variants=users,
                          variant_defaults=own, wisdom=tuple(row.get("wisdom", ()))))
    return KnobTable(tuple(knobs))


def load_knobs(bin_dir: str | Path | None = None) -> KnobTable:
    """The knob table of the hashers in `bin_dir` (default: build/bin or $RINGSUM_BIN_DIR),
    read once per process; KnobsError when a binary is missing or does not describe itself."""
    return _load(Path(bin_dir).absolute() if bin_dir else default_bin_dir())


def _shown(k: Knob, value: Any) -> str:
    if k.is_flag:
        return "on" if value else "off"
    return format_size(value) if k.type == "size" else str(value)


def _default_text(k: Knob) -> str:
    """The knob's default, then each variant's own: "512K; uring_b3sum 4M"."""
    return "; ".join([_shown(k, k.default), *(f"{v} {_shown(k, d)}" for v, d in k.variant_defaults)])


def _users_text(k: Knob) -> str:
    return "all" if set(k.variants) == set(variants.VARIANTS) else ", ".join(k.variants)


def _help_text(k: Knob) -> str:
    """The hasher's --help lines of a knob as one sentence (a line opening with "(" goes on the one before)."""
    return k.help.replace("\n(", " (").replace("\n", "; ")


GENERATED_BY = "ringsum knobs --markdown > docs/knobs.md"
VALUE_WORD = {"size": "SIZE", "count": "N", "buffers": "N", "flag": ""}  # as the hashers' --help names them


def markdown_table(table: KnobTable) -> str:
    """docs/knobs.md's table (`ringsum knobs --markdown`): a row per knob, as the hashers describe it."""
    lines = ["# The hashers' knobs", "",
             f"<!-- Generated from hashers/knobs.h by `{GENERATED_BY}`; tests check it is current. -->",
             "", "Each is a hasher option and a `[[hashers]]` config key (a value or a list to sweep), and a",
             "runs.csv column. Variants that do not use a knob check it, then ignore it.", "",
             "| config key | option | default | variants | what it does |", "|---|---|---|---|---|"]
    for k in table:
        lines.append(f"| `{k.name}` | `{k.option}` | {_default_text(k)} | {_users_text(k)} | "
                     f"{_help_text(k).replace('|', chr(92) + '|')} |")
    return "\n".join(lines) + "\n"


def terminal_view(table: KnobTable, width: int, programs: Sequence[tuple[str, str]] = ()) -> str:
    """`ringsum knobs`: the programs built (name, summary), then a block per knob, wrapped to `width`
    columns: its config key and option, then indented its default, the variants that use it (when
    not all) and what it does."""
    width = max(width, 40)  # narrower, the indented lines would hold a word or two each

    def wrapped(text: str, indent: str, hanging: str = "  ") -> list[str]:
        return textwrap.wrap(text, width, initial_indent=indent, subsequent_indent=indent + hanging,
                             break_long_words=False, break_on_hyphens=False)

    lines = [*wrapped("The hashers' knobs: each is a [[hashers]] config key (a value or a list to sweep), "
                      "a hasher option and a runs.csv column; variants that do not use a knob check it, "
                      "then ignore it.", "", ""), "As Markdown, docs/knobs.md: ringsum knobs --markdown"]
    if programs:
        lines.append("The programs built, each as it describes itself:")
        for name, summary in programs:
            lines += wrapped(f"{name}: {summary}", "  ", "    ")
    for k in table:
        option = ", ".join(filter(None, [k.short, k.option])) + (f" {VALUE_WORD[k.type]}" if VALUE_WORD[k.type] else "")
        lines += ["", *wrapped(f"{k.name}   {option}", "")]
        lines += wrapped(f"default {_default_text(k)}", "    ")
        if _users_text(k) != "all":
            lines += wrapped(f"used by {_users_text(k)}", "    ")
        lines += wrapped(_help_text(k), "    ")
    return "\n".join(lines) + "\n"


_PARSERS: dict[str, config_values.Parser] = {"size": config_values.size, "count": config_values.posint, "buffers": config_values.buffers,
                                      "flag": config_values.boolean}


def flags_on_by_default(table: KnobTable, variant: str) -> tuple[Knob, ...]:
    """The flags a variant has on without being told (uring_b3sum's huge_pages)."""
    return tuple(k for k in table.flags if dict(k.variant_defaults).get(variant) is True)


def switched_on(table: KnobTable, variant: str, values: dict[str, Any]) -> tuple[str, ...]:
    """The flags on in `values` beyond the variant's own: what a command asks for (its label's words)."""
    own = {k.name for k in flags_on_by_default(table, variant)}
    return tuple(k.name for k in table.flags if values.get(k.name) and k.name not in own)


def hasher_knobs(table: KnobTable) -> dict[str, tuple[config_values.Parser, tuple[Any, ...]]]:
    """A hasher group's config knobs: each of the table's, parsed by its type (a number whose least
    is 0 may be 0), the article's default."""
    parsers = {k.name: {"size": config_values.size_or_0, "count": config_values.count}[k.type] if k.min == 0 and not k.is_flag
               else _PARSERS[k.type] for k in table}
    return {k.name: (parsers[k.name], (parsers[k.name](k.default),)) for k in table}
