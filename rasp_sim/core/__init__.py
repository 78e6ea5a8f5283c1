"""The s-op graph and the rules of atoms, the data every later stage reads: `graph` (the
frozen nodes: maps, selects, aggregates over tokens and indices), `semantics` (the single
source of truth for atom operators, the typing table and the aggregate rules),
`atom_functions` (each map op's per-position function, shared by the evaluator and the
compiler) and `library_patterns` (recognising the standard library's constructions in a
graph). It imports only `rasp_sim.base`, never a renderer (docs/architecture.md).
"""
