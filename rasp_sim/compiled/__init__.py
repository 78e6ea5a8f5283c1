"""Compiled models, what a user runs: `Model` (`model`: the weights with their compile
record, run, traced, saved, exported to torch and TransformerLens), `Trace` (`trace`: one
forward pass kept block by block) and the program files a model names (`model_files`).
It stands on the compiler's public surface (`rasp_sim.compiler`) and the language, and is
drawn from above by `rasp_sim.pictures` (docs/architecture.md).
"""
