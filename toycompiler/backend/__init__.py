"""The Inductor half: FX graph in, a callable that runs generated kernels out."""
