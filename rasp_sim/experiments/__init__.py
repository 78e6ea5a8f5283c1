"""Programming a frozen transformer through its embedding (docs/universal.md).

Task generators (tasks/), frozen backbones built on the weight format (backbones.py),
JAX/optax training of the embedding and unembedding (train.py), results and plots
(results.py, plot.py), budgets (budgets.py) and multi-run sweeps through Dask (sweep.py).
JAX and optax are imported only by train.py and what uses it; the generators and
backbones are NumPy only.
"""
