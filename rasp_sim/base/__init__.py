"""The infrastructure every stage stands on, and which knows nothing of RASP programs'
meaning: the error classes with their spans and sources (`errors`), resource limits
(`limits`, `source_limits`), the one rule for values in messages (`text`), safe file
reading and writing (`program_files`, `bounded_read`, `atomic_write`), interrupts and
memory handed back to the system (`interrupts`, `freed_memory`), the local Dask cluster
(`dask_cluster`), and the checks of the Python API's and the command line's arguments
(`api_arguments`, `counts`). It imports nothing else of rasp_sim (docs/architecture.md).
"""
