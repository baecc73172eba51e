"""Examples shipped in the perseus_mxnet wheel (synthetic data), each launched by perseusrun or by plain
mpirun through config.sh (the seed's style, manual 4.6):

    perseusrun -np 2 python -m perseus.mxnet.examples.mxnet_mnist     # Horovod API, DistributedTrainer
    perseusrun -np 2 python -m perseus.mxnet.examples.mxnet_gluon     # gluon.Trainer on dist_sync_perseus
    mpirun -np 2 ./config.sh python -m perseus.mxnet.examples.mxnet_module   # Module.fit on dist_sync_perseus
"""
