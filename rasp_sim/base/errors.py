"""Errors are values with a source span; the CLI prints them, the library raises them.

Every error rasp-sim raises for bad input is a `RaspError`. Its `kind` names the
class of the original interpreter's message (docs/language.md), so differential
tests can compare outcomes without comparing text.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Source:
    """A named source text. Every span of one file (or REPL chunk) shares one `Source`,
    so an error quotes its own line: two files with the same name, or two REPL chunks,
    never stand in for each other."""

    name: str
    text: str = field(default="", repr=False)  # "" when unknown (an unreadable file)


@dataclass(frozen=True)
class Span:
    """A region of `source`: 1-based line and column, end exclusive."""

    source: Source
    line: int
    column: int
    end_line: int
    end_column: int

    @property
    def file(self) -> str:
        return self.source.name

    @classmethod
    def whole_file(cls, file: str) -> "Span":
        """The location of an error about a file as a whole (unreadable, too large):
        line 0, printed as the file name alone."""
        return cls(Source(file), 0, 0, 0, 0)

    def __str__(self) -> str:
        if self.line == 0:
            return self.file
        return f"{self.file}:{self.line}:{self.column}"


def source_line(span: Span) -> str | None:
    """The text of the span's (first) line, or None if its source has no such line."""
    lines = span.source.text.splitlines()
    return lines[span.line - 1] if 1 <= span.line <= len(lines) else None


def quote(span: Span) -> list[str]:
    """The span's source line and a caret under it (nothing if the source is unknown)."""
    line = source_line(span)
    if line is None:
        return []
    width = 1
    if span.end_line == span.line:
        width = max(1, span.end_column - span.column)
    return [f"    {line}", "    " + " " * (span.column - 1) + "^" * width]


class RaspError(Exception):
    """Base class of every user-facing error. `span` may be None for input-data errors."""

    kind = "error"

    def __init__(self, message: str, span: Span | None = None):
        super().__init__(message)
        self.message = message
        self.span = span
        self.notes: list[str] = []  # printed after the source line, e.g. where in a library

    def with_span(self, span: Span | None) -> "RaspError":
        """Attach `span` if this error has none yet; returns self."""
        if self.span is None:
            self.span = span
        return self

    def headline(self) -> str:
        """`file:line:col: kind: message` (`kind: message` without a span): one line."""
        if self.span is None:
            return f"{self.kind}: {self.message}"
        return f"{self.span}: {self.kind}: {self.message}"

    def format(self) -> str:
        """The headline, then the source line and a caret."""
        where = quote(self.span) if self.span is not None else []
        return "\n".join([self.headline(), *where, *self.notes])

    def __str__(self) -> str:
        return self.format()


class RaspSyntaxError(RaspError):
    """Lexical or syntax error (the original's 'antlr exception')."""

    kind = "syntax error"


class RaspNameError(RaspError):
    """Undefined variable, or assignment to a reserved name."""

    kind = "name error"


class RaspTypeError(RaspError):
    """Wrong types, arity, or value for an operation (the original's 'ignoring input')."""

    kind = "type error"


class RaspRuntimeError(RaspError):
    """Python-level failures the original reports as 'something went wrong':
    division by zero, overflow, int('h'), averaging non-numbers."""

    kind = "runtime error"


class RaspLoadError(RaspError):
    """`load` of a file that cannot be found or read."""

    kind = "load error"


class RaspProgramError(RaspError):
    """An error the program raises itself, with its own message (the `assert` extension)."""

    kind = "error"


class RaspResourceError(RaspError):
    """A resource limit (memory, sequence length, recursion depth) would be exceeded."""

    kind = "resource limit"


class OutputRefused(RaspError):
    """An output path rasp-sim will not write: an existing device, FIFO, socket or folder
    (replacing it would destroy what is there, or turn /dev/null into a file as root)."""

    kind = "cannot write"


class CompileError(RaspError):
    """A program the compiler cannot lower (located at the construct, with the reason), or
    a compiled model that disagrees with its program. Raised by `rasp_sim.compile`; the
    compiler's own refusals and validation failures are its subclasses."""

    kind = "cannot compile"


def at_caller(error: RaspError, site: Span) -> RaspError:
    """`error`, located in a loaded file (the standard library, `programs/`), reported at
    `site`: the user's call or statement that led there, with the loaded file's line as a
    note (what failed is in the library, what to change is the user's line)."""
    library = error.span
    if library is not None:
        error.message = f"{error.message} (at {library}, in a loaded library)"
        error.notes = [f"  note: {library}:", *quote(library), *error.notes]
    error.span = site
    return error


def warning_text(error: RaspError, note: str) -> str:
    """`error` reported as a warning (the program goes on): `file:line:col: warning: kind:
    message`, the source line and caret, the error's notes, then `  note: {note}`."""
    where = f"{error.span}: " if error.span is not None else ""
    quoted = quote(error.span) if error.span is not None else []
    return "\n".join([f"{where}warning: {error.kind}: {error.message}", *quoted,
                      *error.notes, f"  note: {note}"])
