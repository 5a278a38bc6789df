"""Make ``import torchvision`` work beside a CPU build of torch, and nothing more.

The classification models (``resnet18``, ``mobilenet_v3_small``, ``VisionTransformer``)
are pure Python over ``torch.nn``; only the detection ops (``nms``, ``roi_align``, ...)
live in torchvision's compiled extension ``torchvision/_C.so``.

The torchvision 0.28.0 wheel on the package index is PyPI's CUDA build. Its ``_C.so``
links against CUDA libraries that a CPU build of torch does not ship, so it fails to
load; torchvision's ``__init__`` carries on without it, then imports
``_meta_registrations``, which registers fake kernels for ``torchvision::nms`` and
friends and stops the import with ``RuntimeError: operator torchvision::nms does not
exist``.

When, and only when, ``_C.so`` cannot be loaded, the two modules that register
kernels for those missing ops (``torchvision._meta_registrations`` and
``torchvision._autograd_registrations``) are replaced by empty ones in
``sys.modules`` before torchvision is imported. The models never call the detection
ops, and the ops themselves still raise torchvision's own "Couldn't load custom C++
ops" error if anything does. With a matching build (the GPU machine: torchvision 0.26
beside torch 2.11, both CUDA) the library loads and this file changes nothing.
"""

import importlib.util
import os
import sys
import types

import torch


def _torchvision_extension_loads() -> bool:
    spec = importlib.util.find_spec("torchvision")
    if spec is None or spec.origin is None:
        return True  # torchvision not installed: the model tests skip themselves (importorskip)
    library = os.path.join(os.path.dirname(spec.origin), "_C.so")
    if not os.path.exists(library):
        return True  # a build without the extension imports fine by itself
    try:
        torch.ops.load_library(library)  # what torchvision.extension does first; loading twice is harmless
    except OSError:
        return False
    return True


if "torchvision" not in sys.modules and not _torchvision_extension_loads():
    for name in ("torchvision._meta_registrations", "torchvision._autograd_registrations"):
        sys.modules.setdefault(name, types.ModuleType(name))
