"""What `rasp-sim draw` writes, in a module that imports nothing, so that building the
command's parser stays light (tests/test_cli_options.py)."""

PICTURE_SUFFIXES = (".svg", ".png", ".pdf")
DRAW_FORMATS = ("svg", "png", "pdf", "dot")  # -o - --format: the suffixes without a dot
DEFAULT_DPI = 100  # a PNG's resolution; the size rule of docs/cli.md, "Layers and heads", is at it


def check_suffix(path: str) -> None:
    """Refuse a file name `draw` cannot write, before any work."""
    from ..base.errors import RaspError

    suffix = path[path.rfind("."):].lower() if "." in path else ""
    if suffix not in (*PICTURE_SUFFIXES, ".dot"):
        raise RaspError(f"cannot draw to '{path.rsplit('/', 1)[-1]}': the file name must end "
                        f"in {', '.join(PICTURE_SUFFIXES)} or .dot")
