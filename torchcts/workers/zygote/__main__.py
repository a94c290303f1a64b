"""Run as a script (`python path/to/zygote ...`): load this package under a private name, without
importing torchcts (whose package a worker imports after the fork, from its own sys.path)."""

import importlib
import importlib.util
import os
import sys

if __package__:  # python -m torchcts.workers.zygote
    from .cli import main
else:
    NAME = "_torchcts_zygote"
    HERE = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location(NAME, os.path.join(HERE, "__init__.py"),
                                                  submodule_search_locations=[HERE])
    package = importlib.util.module_from_spec(spec)
    sys.modules[NAME] = package
    spec.loader.exec_module(package)
    main = importlib.import_module(NAME + ".cli").main

main(sys.argv[1:])
