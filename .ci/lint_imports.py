"""Check the import contracts of pyproject.toml's [tool.importlinter] with `lint-imports`.

import-linter reads the package from the folder Python finds it in, so here it
would see toycompiler/ alone: widgets/, lessons/checkers/ and bench/ install as
toycompiler.widgets, .checkers and .bench (pyproject's
[tool.setuptools.package-dir]), and an import of them from the compiler would
name a module the graph lacks, which import-linter skips without a word. So
this first copies the package as it installs into a temporary folder, then
runs `lint-imports` there. Exit status: lint-imports' own (non-zero when a
contract is broken).

    python .ci/lint_imports.py
"""

import pathlib
import shutil
import subprocess
import sys
import tempfile
import tomllib

ROOT = pathlib.Path(__file__).resolve().parent.parent


def lay_out_installed(dest: pathlib.Path) -> None:
    """toycompiler/ with each folder of [tool.setuptools.package-dir] copied to where it installs."""
    skip = shutil.ignore_patterns("__pycache__", "*.pyc", "results", "static")
    shutil.copytree(ROOT / "toycompiler", dest / "toycompiler", ignore=skip)
    mapping = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"].get("package-dir", {})
    for package, folder in mapping.items():
        if package.startswith("toycompiler.") and (ROOT / folder).is_dir():
            shutil.copytree(ROOT / folder, dest.joinpath(*package.split(".")), ignore=skip, dirs_exist_ok=True)


def main() -> int:
    lint_imports = pathlib.Path(sys.executable).with_name("lint-imports")
    with tempfile.TemporaryDirectory(prefix="toycompiler-imports-") as tmp:
        lay_out_installed(pathlib.Path(tmp))
        # lint-imports puts its working folder first on sys.path: it finds this copy, not the editable install.
        cmd = [str(lint_imports), "--config", str(ROOT / "pyproject.toml"), "--no-cache"]
        return subprocess.run(cmd, cwd=tmp).returncode


if __name__ == "__main__":
    sys.exit(main())
