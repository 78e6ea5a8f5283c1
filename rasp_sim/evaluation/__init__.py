"""Evaluation, s-op graph to values: `evaluate` runs a graph on a batch of inputs (groups
by length, s-ops as (batch, n) arrays, selectors as (batch, n, n) booleans), over the
vectorised kernels: value columns (`columns`), map ops (`elementwise`), selectors and
aggregates (`attention`) and the library's fused gathers (`fusion`). It reads
`rasp_sim.core` and nothing above it (docs/architecture.md)."""
