"""What `rasp-sim draw` writes, in a module that imports nothing, so that building the
command's parser stays light (tests/test_cli_options.py)."""

PICTURE_SUFFIXES = (".svg", ".png", ".pdf")
DEFAULT_DPI = 100  # a PNG's resolution; the size rule of README "Layers and heads" is at it
