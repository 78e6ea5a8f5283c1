"""The capacity check: exact targets for the experiments' tasks, embedded into the frozen
machines with the project's own construction (compiler/universal/embed.py), and scored
without training: the ceiling of what embedding-only training can reach
(docs/universal.md, "How high can training go?")."""
