"""A compiled model as the Python API shows it (docs/python.md): the weights of
`rasp_sim.compile` or `rasp_sim.load_model`, run with the program's output types, saved
with the CLI's checks, and laid open block by block.

The weights themselves are `rasp_sim.compiler.Transformer` (the weight format of
docs/compiler.md); `Model` adds what a user asks of them and nothing that changes them.
NumPy only: neither tracr nor JAX is imported here.
"""
from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np

from ..compiler import (AttentionBlock, Transformer, WeightsError, as_dense, compile_info,
                        load_compiled, run_weights, save_weights)
from ..base import api_arguments as arguments
from ..base.api_arguments import input_list, one_input
from ..base.errors import RaspError
from ..evaluation.evaluate import DEFAULT_MEMORY_LIMIT

if TYPE_CHECKING:
    import networkx as nx

    from .circuit_check import CircuitCheck
    from .trace import Trace


@dataclass(frozen=True)
class Operation:
    """A RASP operation a block computes: `op` as "Kind 'label'" (the tracr expression
    the compiler lowered it to), `at` the program's file:line:col, None where the
    operation has no source (a conversion the compiler added)."""

    op: str
    at: str | None


@dataclass(frozen=True, eq=False)
class Block:
    """One block of the weight format: an attention block (`kind` "attention", arrays
    `heads.H.w_q`, `.w_k`, `.w_v`, `.w_o` per head) or an MLP (`kind` "mlp", arrays `w1`,
    `b1`, `w2`, `b2`, and `w_gate`, `b_gate` for a gated one), with the operations it
    computes. Arrays are dense float64 NumPy arrays, residual directions as rows of the
    input-side matrices (`Model.residual_labels` names them)."""

    index: int
    kind: str
    operations: tuple[Operation, ...]
    arrays: Mapping[str, np.ndarray] = field(repr=False)


@dataclass(frozen=True, eq=False)
class Model:
    """Compiled, validated transformer weights and their compile record."""

    weights: Transformer
    warning: str | None = None  # set when an unvalidated model was loaded on request

    @property
    def info(self) -> dict[str, Any]:
        """The compile record (program, name, domain, sizes, validation report)."""
        return compile_info(self.weights)

    @property
    def proof(self) -> dict[str, Any] | None:
        """The whole-domain proof recorded by `rasp-sim compile --exhaustive` or `verify
        --exhaustive` (domain, inputs, oracles, result: docs/compiler.md), None if none."""
        recorded = self.info.get("proof")
        return recorded if isinstance(recorded, dict) else None

    @property
    def validated(self) -> bool:
        return self.weights.metadata.get("validated") is True

    @property
    def width(self) -> int:
        """The residual width D: the number of residual directions (a compressed model's
        compressed width: docs/compiler.md#compression-with-a-certificate)."""
        return self.weights.width

    @property
    def residual_labels(self) -> tuple[str, ...]:
        """The name of each residual direction, `label:value` for a categorical s-op's
        value and `label` for a numerical s-op (tracr's basis directions)."""
        return tuple(self.weights.residual_labels or ())

    @property
    def layers(self) -> tuple[Block, ...]:
        """Every block in order, with its weights and the RASP operations it computes."""
        described = self.info.get("blocks") or []
        blocks = []
        for index, block in enumerate(self.weights.layers):
            operations = tuple(Operation(entry.get("op", "?"), entry.get("at"))
                               for entry in (described[index] if index < len(described) else []))
            blocks.append(Block(index, "attention" if isinstance(block, AttentionBlock) else "mlp",
                                operations, _arrays(block)))
        return tuple(blocks)

    def run(self, inputs: Sequence[Any], *, memory_limit: int = DEFAULT_MEMORY_LIMIT) -> list:
        """The model's output on each input, decoded as the program's values (ints stay
        ints): a list of token lists (a str's characters are its tokens), or of real
        numbers for a numeric-input model."""
        return run_weights(self.weights, [list(x) for x in input_list("run", inputs)],
                           memory_limit=arguments.memory_limit("run", memory_limit))

    def trace(self, sequence: Sequence[Any]) -> "Trace":
        """The model's computation on one input (a str's characters, or a list of tokens
        or numbers): the residual stream after the embedding and after every block, each
        head's attention pattern, each MLP's hidden activations, the logits and the
        decoded output, labelled with the blocks' RASP operations (rasp_sim/compiled/trace.py)."""
        from .trace import trace

        return trace(self, one_input("trace", sequence))

    def circuit(self, names: str = "rasp") -> "nx.DiGraph":
        """The model's ground-truth circuit as a networkx DiGraph (docs/transformer_lens.md,
        "Ground-truth circuits"): a node for the token and position embeddings (or
        `input_proj`), each attention head, each MLP and the unembedding, labelled with its
        RASP operations and their source, and its TransformerLens hooks (`hook`,
        `hook_index`, `hook_inputs`); an edge A -> B where B reads residual directions A
        writes (`directions`, and per role `reads`). Nodes and edges the output does not
        depend on are marked `dead`. Node ids are short names ("block3.head0") with
        names="rasp", hook names with "transformer_lens"."""
        from .circuit import circuit_graph

        names = arguments.text("circuit", names, "names")
        try:
            described = self.info.get("blocks") or []
        except WeightsError:  # no compile record (a universal transformer): no operations
            described = []
        return circuit_graph(self.weights, [block if isinstance(block, list) else []
                                            for block in described], names)

    def check_circuit(self, edges: Any = None, *, ablations: Sequence[str] = ("zero", "mean",
                                                                             "resample"),
                      inputs: Sequence[Any] | None = None, seed: int = 0,
                      per_edge: bool = True, names: str = "rasp") -> "CircuitCheck":
        """Whether a circuit (a set of (sender, receiver) edges of `circuit(names)`; default
        the ground-truth circuit, every live edge) computes the model's output on its whole
        domain (or `inputs`): the TransformerLens model run with every other edge ablated
        (zero, mean or resample ablation: docs/transformer_lens.md, "Ground-truth
        circuits"), and with `per_edge` each circuit edge removed alone. Needs the `interp`
        extra."""
        seed = arguments.integer("check_circuit", seed, "seed", 0)
        per_edge = arguments.flag("check_circuit", per_edge, "per_edge")
        names = arguments.text("check_circuit", names, "names")
        _require_interp("check_circuit", "torch", "transformer_lens")
        from .circuit_check import check_circuit

        return check_circuit(self, edges, ablations=ablations, inputs=inputs, seed=seed,
                             per_edge=per_edge, names=names)

    def save(self, path: str | Path) -> None:
        """Write the weights to `path`, a .npz or .safetensors file (its suffix says which;
        another is refused), hashed and checked as `rasp-sim compile -o` writes them."""
        path = arguments.model_path("save", path)
        try:
            save_weights(self.weights, path)
        except OSError as error:
            raise RaspError(f"cannot write the weights to {path}: {error.strerror}") from None

    def to_torch(self, dtype: Any = None, device: Any = None) -> Any:
        """The model as a `torch.nn.Module` (rasp_sim.compiler.torch_loader.load_torch):
        float64 parameters unless `dtype` (e.g. torch.float32) says otherwise; token ids
        in, or float features of at least the module's precision (docs/transformer_lens.md).
        Needs torch (`pip install "rasp-sim[interp]"`)."""
        arguments.torch_dtype("to_torch", dtype)
        arguments.torch_device("to_torch", device)
        _require_interp("to_torch", "torch")
        from ..compiler.torch_loader import load_torch

        return load_torch(self.weights, dtype, device)

    def to_transformer_lens(self, dtype: Any = None, device: Any = None) -> Any:
        """The model as a TransformerLens model (float64 unless `dtype`): a
        `TransformerBridge` on transformer-lens 4.x, a `HookedTransformer` on 3.x, with
        `.residual_labels`, `.block_map` (block index of `layers` -> (layer, "attn" |
        "mlp")), `.input(inputs)` and `.run(inputs)` (docs/transformer_lens.md). Raises
        an ExportError (a CompileError) for what TransformerLens cannot compute exactly.
        Needs the `interp` extra (torch, transformer-lens)."""
        arguments.torch_dtype("to_transformer_lens", dtype)
        arguments.torch_device("to_transformer_lens", device)
        _require_interp("to_transformer_lens", "torch", "transformer_lens")
        import torch

        from ..compiler.transformer_lens_export import to_transformer_lens

        return to_transformer_lens(self.weights, dtype or torch.float64, device)

    def __repr__(self) -> str:
        info = self.info
        return (f"<Model {info.get('name')!r} of {info.get('program')!r}: "
                f"{len(self.weights.layers)} blocks, residual width {self.weights.width}, "
                f"{'validated' if self.validated else 'NOT validated'}>")


def _require_interp(method: str, *modules: str) -> None:
    """A RaspError naming the extra when an optional module of `method` is missing."""
    for module in modules:
        if importlib.util.find_spec(module) is None:
            raise RaspError(f"Model.{method} needs {module}: pip install 'rasp-sim[interp]'")


def _arrays(block: Any) -> dict[str, np.ndarray]:
    if isinstance(block, AttentionBlock):
        return {f"heads.{h}.{name}": as_dense(getattr(head, name))
                for h, head in enumerate(block.heads)
                for name in ("w_q", "w_k", "w_v", "w_o") if getattr(head, name) is not None}
    return {name: as_dense(getattr(block, name))
            for name in ("w1", "b1", "w2", "b2", "w_gate", "b_gate")
            if getattr(block, name) is not None}


def load_model(path: str | Path, *, allow_unvalidated: bool = False,
               memory_limit: int = DEFAULT_MEMORY_LIMIT) -> Model:
    """A model written by `rasp-sim compile` or `Model.save`, with the CLI's checks: the
    header and every array are checked before they are read (a WeightsError names the
    field), at most `memory_limit` bytes of arrays are read, and a model not marked
    validated is refused unless `allow_unvalidated` (then `Model.warning` says why)."""
    weights, warning = load_compiled(
        arguments.path("load_model", path, "path"),
        arguments.flag("load_model", allow_unvalidated, "allow_unvalidated"),
        arguments.memory_limit("load_model", memory_limit))
    return Model(weights, warning)
