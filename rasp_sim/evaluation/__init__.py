"""The vectorised kernels behind `rasp_sim.evaluate`: value columns (`columns`), Map ops
(`elementwise`), selectors and aggregate (`attention`)."""
