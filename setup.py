"""Package list for setuptools; everything else is in pyproject.toml.

toycompiler and its subpackages are found automatically. The views live in
the top-level widgets/ folder but install as toycompiler.widgets (the mapping
is [tool.setuptools.package-dir] in pyproject.toml); pyproject's own find
directive cannot add a package under another folder's name, so it is added here.
"""

from setuptools import find_packages, setup

setup(packages=[*find_packages(include=["toycompiler", "toycompiler.*"]), "toycompiler.widgets"])
