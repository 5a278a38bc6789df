"""``python -m toycompiler.bench.models``: the model benchmark's results file and its table."""

import json

import torch
from toycompiler.bench import models


def test_gpt_rows_report_what_explain_shows_and_the_table_prints_them(tmp_path, capsys):
    out = tmp_path / "models.json"
    models.main(["--device", "cpu", "--quick", "--only", "gpt", "--out", str(out)])
    result = json.loads(out.read_text())
    rows = result["models"]
    assert [(r["model"], r["mode"]) for r in rows] == [("gpt", "eval"), ("gpt", "train")]
    for r in rows:
        assert (r["graphs"], r["breaks"], r["fallbacks"]) == (1, 0, [])
        assert r["kernels"] > 0 and r["extern_calls"] > 0  # generated kernels, and the matmuls as library calls
        assert set(r["wall_ms"]) == {"eager", "torch.compile", "toycompiler"} and not r["gpu_ms"]
    assert rows[1]["kernels"] > rows[0]["kernels"]  # the training step adds the backward's kernels
    capsys.readouterr()
    models.main(["--table", str(out)])
    table = capsys.readouterr().out
    assert "| gpt | train | cpp | 1 | 0 |" in table and result["machine"]["torch"] == torch.__version__
