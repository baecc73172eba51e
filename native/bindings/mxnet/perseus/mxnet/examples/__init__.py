"""Examples shipped in the perseus_mxnet wheel: `perseusrun -np 2 python -m perseus.mxnet.examples.mxnet_mnist`."""
