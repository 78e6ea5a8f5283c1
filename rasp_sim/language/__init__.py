"""The RASP language: source text to AST (`grammar.lark`, `parser`, `syntax_messages`,
`ast`), AST to s-op graph (`interpreter` with `environment`, `values`, `operations`,
`expression_names` and the standard library `stdlib.rasp`), the `Program` a file becomes,
the REPL and `run` sessions (`repl_session`, `run_session`, `display`,
`definition_check`), where a library error is reported (`call_sites`) and the layer/head
schedule of a graph (`analyse`, `library`). It evaluates through `rasp_sim.evaluation`
and never imports the compiler, the pictures or the command line (docs/architecture.md).
"""
