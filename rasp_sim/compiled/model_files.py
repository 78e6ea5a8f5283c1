"""The files a model names, and the one rule for reading them (docs/compiler.md, "What a
model file is trusted for").

A compiled model's compile record names its program (`program`) and, per operation, the
source location it was compiled from (`at`, `file:line:col`). The record is covered by a
SHA-256 checksum, not a signature: anyone can forge a hash-valid model naming any path.
So `report` (source lines, the interpreter's reference output) and `universal verify`
(the program it compares with) read a named file only if

- it resolves (links followed, `..` removed) inside the model's folder, subfolders
  included, or the bundled library (rasp_sim/programs, and the standard library
  `<stdlib>`); a relative name is resolved against the model's folder, not the current
  one;
- it is a `.rasp` file, and a regular one (a FIFO would block, a device never ends);
- it holds at most MAX_PROGRAM_BYTES, and is UTF-8 text.

The folder rule is checked on the name before anything is opened, and again on the file
actually opened (rasp_sim/base/program_files.opened_path), so a link swapped in between cannot
reach another file. A program is run from the text so read, with `load` confined to the
same folders (the interpreter's `--sandbox`).
"""
from __future__ import annotations

import importlib.resources
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..base.program_files import (MAX_PROGRAM_BYTES, FileTooLarge, NotRegularFile, open_regular,
                                  opened_path, read_open_file)

if TYPE_CHECKING:
    from ..language.program import Program

STDLIB = "<stdlib>"  # the standard library's name in source locations (interpreter.py)
# file:line:col, as compile records `at`; a longer line number is no location (and int()
# refuses numbers of over 4,300 digits)
_LOCATION = re.compile(r"(.*):(\d{1,12}):\d+")


class Refused(Exception):
    """A named file that is not read: `short` for a label ("outside the model's folder"),
    the message for a sentence."""

    def __init__(self, short: str, detail: str | None = None):
        super().__init__(detail or short)
        self.short = short


@dataclass(frozen=True)
class SourceLine:
    """The text of a source location, or why it is not shown (`refused`)."""

    text: str | None
    refused: Refused | None = None


@dataclass
class ModelFiles:
    """The files the model in `folder` may name; texts read once each."""

    folder: Path  # resolved
    _texts: dict[str, str | Refused] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, model_path: str | os.PathLike) -> "ModelFiles":
        """The files of the model at `model_path`: its folder is the one that holds the
        name given (a link named as the model does not widen it to where it points)."""
        return cls(Path(os.path.abspath(model_path)).parent.resolve())

    @property
    def roots(self) -> tuple[Path, ...]:
        return (self.folder, *_library_roots())

    def path(self, name: str) -> Path:
        """The resolved path `name` stands for, if the rule allows it; else Refused."""
        try:
            resolved = (self.folder / name).resolve()  # an absolute name replaces the folder
        except (OSError, ValueError, RuntimeError):  # a NUL byte, a loop of links
            raise Refused("unreadable", f"{name!r} does not resolve to a file") from None
        self._check_inside(name, resolved)
        if resolved.suffix != ".rasp":
            raise Refused("not a .rasp file", f"{name} resolves to {resolved}, which is "
                          "not a .rasp file")
        return resolved

    def text(self, name: str) -> str:
        """The UTF-8 text of the file `name`, read under the rule; else Refused."""
        if name not in self._texts:
            try:
                self._texts[name] = _stdlib_text() if name == STDLIB else self._read(name)
            except Refused as refusal:
                self._texts[name] = refusal
        found = self._texts[name]
        if isinstance(found, Refused):
            raise found
        return found

    def refused(self) -> dict[str, Refused]:
        """The files asked for so far that were not read, and why."""
        return {name: found for name, found in self._texts.items()
                if isinstance(found, Refused)}

    def source_line(self, at: str | None) -> SourceLine | None:
        """The source line `at` (`file:line:col`) names, or why it is not shown; None if
        `at` is not a location."""
        found = _LOCATION.fullmatch(at or "")
        if found is None:
            return None
        try:
            lines = self.text(found[1]).splitlines()
        except Refused as refusal:
            return SourceLine(None, refusal)
        number = int(found[2])
        if not 0 < number <= len(lines):
            return SourceLine(None, Refused(f"no line {number}", f"{found[1]} has "
                                            f"{len(lines)} lines, not {number}"))
        return SourceLine(lines[number - 1].strip())

    def run_program(self, name: str) -> "Program":
        """Run the program file `name` (run mode) from the text read under the rule, its
        `load`s confined to the model's folder and the library. Refused if it may not be
        read; a RaspError if it fails."""
        from ..language.repl_session import Session

        text = self.text(name)
        return Session(sandbox=self.folder).run_source(text, str(self.path(name)))

    def _read(self, name: str) -> str:
        path = self.path(name)
        try:
            fd, info = open_regular(path, "source")
        except FileNotFoundError:
            raise Refused("no such file", f"{path}: no such file") from None
        except NotRegularFile:
            raise Refused("not a regular file", f"{path} is not a regular file (a FIFO, "
                          "socket, device or folder)") from None
        except OSError as error:
            raise Refused("unreadable", f"cannot read {path}: {error.strerror}") from None
        try:
            self._check_inside(name, opened_path(fd, path, info))  # a link swapped in
            data = read_open_file(fd, info, MAX_PROGRAM_BYTES)
        except FileTooLarge:
            raise Refused("too large", f"{path} has more than {MAX_PROGRAM_BYTES:,} bytes, "
                          "the limit on program files") from None
        finally:
            os.close(fd)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise Refused("not UTF-8", f"{path} is not UTF-8 text") from None

    def _check_inside(self, name: str, resolved: Path | None) -> None:
        if resolved is None or not any(resolved.is_relative_to(root) for root in self.roots):
            raise Refused("outside the model's folder",
                          f"{name} is outside the model's folder {self.folder} and the "
                          "bundled library")


def _library_roots() -> tuple[Path, ...]:
    """The bundled library's folder (rasp_sim/programs), resolved."""
    try:
        return (Path(str(importlib.resources.files("rasp_sim.programs"))).resolve(),)
    except ModuleNotFoundError:
        return ()


def _stdlib_text() -> str:
    return importlib.resources.files("rasp_sim.language").joinpath("stdlib.rasp").read_text("utf-8")
