"""The program of install_AIACC-Training.sh, as a package: it runs under the user's Python, 3.6 or newer,
with the standard library only (no f-strings `=`, no walrus, no capture_output, no dataclasses).

`aiacc-build render` flattens it into one module embedded in the script (aiacc_build/render/installer_program.py):
the modules in MODULES order, each one's relative imports dropped. So a module imports only modules
listed before it, by `from .module import name` lines, and no two modules define the same top-level name.
"""

# Dependency order: each module imports only from modules before it.
MODULES = ("exits", "common", "table", "cuda_drivers", "detect", "decide", "prerequisites", "mirror", "manifest",
           "environment", "apply", "__main__")
