"""What perseus-common knows of each framework: generated from the build tool's framework adapters
(src/aiacc_build/adapters/) by `aiacc-build frameworks runtime-table --write`. Do not edit.

Each row: name, display_name, import_name, distributions (normalised names), distribution_pattern (a
regular expression over normalised names, or None), binding_distribution, selftest_module,
runtime_hook (a module `import perseus` installs, or None), honours_engine_variables (its runtime runs on
the native engine: perseus.config's ENGINE_RUNTIMES), build_variables (PERSEUS_* inputs of its binding's
build, not settings of a job), doctor_probe (Python code printing one JSON object of the framework's build
facts), installer (how the install script finds its CUDA).
"""

FRAMEWORKS = [{'name': 'torch',
  'display_name': 'PyTorch',
  'import_name': 'torch',
  'distributions': ['torch'],
  'distribution_pattern': None,
  'binding_distribution': 'perseus_torch',
  'selftest_module': 'perseus.torch._selftest',
  'runtime_hook': 'perseus._torch_hook',
  'honours_engine_variables': True,
  'build_variables': ['PERSEUS_TORCH_DIR'],
  'doctor_probe': 'import json, torch\n'
                  'd = {"version": torch.__version__, "cuda": torch.version.cuda, "cxx11_abi": '
                  'bool(torch._C._GLIBCXX_USE_CXX11_ABI),\n'
                  '     "cuda_available": torch.cuda.is_available(), "devices": torch.cuda.device_count() if '
                  'torch.cuda.is_available() else 0}\n'
                  'try:\n'
                  '    d["cudnn"] = torch.backends.cudnn.version()\n'
                  'except Exception:\n'
                  '    d["cudnn"] = None\n'
                  'import torch.distributed as dist\n'
                  'd["distributed"] = dist.is_available()\n'
                  'if d["distributed"]:\n'
                  '    d["gloo"] = dist.is_gloo_available(); d["nccl"] = dist.is_nccl_available(); d["mpi"] '
                  '= dist.is_mpi_available()\n'
                  'print(json.dumps(d))\n',
  'installer': {'cuda_method': 'python-assignment',
                'cuda_file': 'version.py',
                'cuda_variable': 'cuda',
                'cpu_distributions': []}},
 {'name': 'tensorflow',
  'display_name': 'TensorFlow',
  'import_name': 'tensorflow',
  'distributions': ['tensorflow',
                    'tensorflow-cpu',
                    'tensorflow-gpu',
                    'tensorflow-aarch64',
                    'intel-tensorflow',
                    'tf-nightly'],
  'distribution_pattern': None,
  'binding_distribution': 'perseus_tensorflow',
  'selftest_module': 'perseus.tensorflow._selftest',
  'runtime_hook': None,
  'honours_engine_variables': True,
  'build_variables': ['PERSEUS_TENSORFLOW_PYTHON'],
  'doctor_probe': 'import json, os\n'
                  'os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")\n'
                  'import tensorflow as tf\n'
                  'info = tf.sysconfig.get_build_info() if hasattr(tf.sysconfig, "get_build_info") else {}\n'
                  'print(json.dumps({"version": tf.__version__, "cuda": info.get("cuda_version"), "cudnn": '
                  'info.get("cudnn_version"),\n'
                  '                  "cxx11_abi": bool(tf.sysconfig.CXX11_ABI_FLAG), "cuda_built": '
                  'bool(info.get("is_cuda_build"))}))\n',
  'installer': {'cuda_method': 'tensorflow-build-info',
                'cuda_file': None,
                'cuda_variable': None,
                'cpu_distributions': ['tensorflow-cpu']}},
 {'name': 'mxnet',
  'display_name': 'MXNet',
  'import_name': 'mxnet',
  'distributions': ['mxnet', 'mxnet-mkl', 'mxnet-native'],
  'distribution_pattern': 'mxnet-cu\\d+(mkl)?',
  'binding_distribution': 'perseus_mxnet',
  'selftest_module': 'perseus.mxnet._selftest',
  'runtime_hook': None,
  'honours_engine_variables': True,
  'build_variables': ['PERSEUS_MXNET_DIR'],
  'doctor_probe': 'import json, mxnet as mx\n'
                  'f = mx.runtime.Features()\n'
                  'print(json.dumps({"version": mx.__version__, "cuda": "yes" if f.is_enabled("CUDA") else '
                  'None,\n'
                  '                  "nccl": f.is_enabled("NCCL"), "cxx11_abi": None}))\n',
  'installer': {'cuda_method': 'distribution-suffix',
                'cuda_file': None,
                'cuda_variable': None,
                'cpu_distributions': []}}]
