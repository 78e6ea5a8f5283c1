"""What one training run is: task, backbone, sizes, optimiser settings and seeds."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields

from .backbones import EMBED_STD, Sizes


# The settings added after records were first written: a record leaves each out while it
# holds its default (RunConfig.to_dict).
ADDED_LATER = frozenset({"length_curriculum", "shift_short", "embed_std"})


@dataclass(frozen=True)
class RunConfig:
    task: str
    variant: str
    sizes: Sizes
    seed: int = 0
    task_options: dict = field(default_factory=dict)
    steps: int = 200
    batch: int = 64
    lr: float = 1e-3
    weight_decay: float = 1e-3
    warmup: int = 20
    schedule: str = "cosine"      # warm-up then "cosine" or "linear" decay to 0
    clip: float = 1.0
    data_seed: int = 43           # training stream seed, combined with `seed`
    eval_every: int = 50
    checkpoint_every: int = 0     # 0: only when stopped early or interrupted
    # ((seq_len, steps), ...): the first steps train on shorter sequences (curriculum.py),
    # at a random offset in the position rows with shift_short
    length_curriculum: tuple[tuple[int, int], ...] = ()
    shift_short: bool = False
    # the standard deviation of the token and position embeddings' initial entries
    embed_std: float = EMBED_STD

    def to_dict(self) -> dict:
        """The settings as JSON data (what a record reads back equals it); without the
        settings ADDED_LATER while they hold their defaults, so that
        the records and checkpoints written before they existed still match their runs."""
        data = asdict(self)
        data["length_curriculum"] = [list(phase) for phase in self.length_curriculum]
        for setting in fields(self):
            if setting.name in ADDED_LATER and getattr(self, setting.name) == setting.default:
                del data[setting.name]
        return data

    @classmethod
    def from_dict(cls, data: dict) -> "RunConfig":
        curriculum = tuple(tuple(phase) for phase in data.get("length_curriculum", ()))
        return cls(**{**data, "sizes": Sizes(**data["sizes"]),
                      "length_curriculum": curriculum})

    def name(self) -> str:
        """A unique, file-safe run name (the run's output folder)."""
        s = self.sizes
        hops = self.task_options.get("max_hops")
        grown = curriculum_name(self.length_curriculum, self.shift_short)
        return (f"{self.task}-H{s.heads}L{s.layers}k{s.head_dim}c{s.out_dim}"
                f"{'' if hops is None else f'-hops{hops}'}{grown}-{self.variant}"
                f"-seed{self.seed}")


def curriculum_name(phases: tuple[tuple[int, int], ...], shift_short: bool) -> str:
    """The part of a run's (or output folder's) name that says its length curriculum:
    "-len30x3000-shifted", or "" without one."""
    return "".join(f"-len{length}x{steps}" for length, steps in phases) + \
        ("-shifted" if shift_short and phases else "")
