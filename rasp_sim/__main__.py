"""`python -m rasp_sim` is the `rasp-sim` command."""
import sys

from .cli import main

sys.exit(main())
