"""Package list for setuptools; everything else is in pyproject.toml.

toycompiler and its subpackages (the compiler) are found automatically. Three
packages outside toycompiler/ install under its name: the views (widgets/ as
toycompiler.widgets), the lessons' exercise checkers (lessons/checkers/ as
toycompiler.checkers) and the benchmark (bench/ as toycompiler.bench). The
mapping is [tool.setuptools.package-dir] in pyproject.toml; pyproject's own
find directive cannot add a package under another folder's name, so they are
listed here.
"""

from setuptools import find_packages, setup

OUTSIDE = ["toycompiler.widgets", "toycompiler.checkers", "toycompiler.bench"]

setup(packages=[*find_packages(include=["toycompiler", "toycompiler.*"]), *OUTSIDE])
