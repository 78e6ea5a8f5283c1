"""Everything drawn: the renderer-independent drawing of an s-op graph and its DOT text
(`draw`, `draw_labels`, `draw_collapse`, `draw_formats`), its layout and painting to
SVG/PNG/PDF (`draw_layout`, `draw_matplotlib`), Jupyter's renderings (`notebook`), trace
figures (`trace_plot`) and the HTML report of a compiled model (`report`). Pictures sit
above the objects they draw: a `Program`'s, a graph node's or a `Trace`'s notebook repr
resolves its renderer here by name at display time (`rasp_sim.base.renderers`), so
nothing below imports this package (docs/architecture.md).
"""
