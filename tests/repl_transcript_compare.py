"""Comparing REPL transcripts with the original's apart from error messages, whose text is
rasp-sim's own (`file:line:col: kind: message`, the source line and a caret: the one
deliberate difference from the original's REPL output).

`without_errors(text, original)` replaces each error message by the line `<error>` (kept
after the prompts that precede it on its line), for a transcript of the original
(`original=True`) or of rasp-sim.
"""
from __future__ import annotations

import re

_PROMPTS = re.compile(r"^((?:(?:>>|\.\.) (?:  )*)*)")
# rasp-sim's error headline: `file:line:col: kind: message`, or `kind: message`
_OUR_ERROR = re.compile(r"^(\S+:\d+:\d+: )?(syntax error|name error|type error|runtime error"
                        r"|load error|error|resource limit): ")
# the original's error lines, each kind opening one message
_ORIGINAL_BLOCKS = ("\t\t!!ignoring input:", "\t!!statement executed")
_ORIGINAL_LINES = ("something went wrong", "\t!! antlr exception",
                   "not implemented this command yet")
_IGNORING = "\t\t!!ignoring input:"  # rasp-sim keeps it before an error in a loaded file


def without_errors(text: str, original: bool) -> list[str]:
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        prompts = _PROMPTS.match(line)
        prefix = prompts.group(1) if prompts else ""
        rest = line[len(prefix):]
        if original:
            if rest.startswith(_ORIGINAL_BLOCKS):
                while i < len(lines) and lines[i].startswith("\t"):  # the message
                    i += 1
            elif not rest.startswith(_ORIGINAL_LINES):
                out.append(line)
                continue
        else:
            if rest == _IGNORING and i < len(lines) and _OUR_ERROR.match(lines[i][2:]):
                rest = lines[i][2:]
                i += 1
            if not _OUR_ERROR.match(rest):
                out.append(line)
                continue
            if (i + 1 < len(lines) and lines[i].startswith("    ")
                    and lines[i + 1].strip().startswith("^")):
                i += 2  # the source line and its caret
            while i < len(lines) and lines[i].startswith("  note:"):
                i += 1
        out.append(prefix + "<error>")
    return out
