"""perseus.torch: the PyTorch binding of AIACC-Training (shipped in the per-cell perseus_torch wheel)."""
