"""``python -m toycompiler.bench --merge FILE.json``: one benchmark split over several commands."""

import pytest
from toycompiler.bench.__main__ import merge


def result(names, copy_gbps=100.0, compile_times=None, device="cuda"):
    rows = [{"name": n, "times_ms": {"toy": 1.0, "inductor": 1.0}, "gbps": {"toy": 50.0}} for n in names]
    return {"machine": {"name": "H100", "device": device, "threads": 1, "copy_gbps": copy_gbps}, "quick": False,
            "toy_mode": "default", "workloads": rows, "compile": compile_times or {}, "overhead_us": {}}


def test_rows_run_now_replace_old_ones_and_keep_the_suite_order():
    old = result(["softmax", "sin_cos", "col_sum"], copy_gbps=120.0, compile_times={"toy": {"cold_s": 1.0}})
    new = result(["col_sum", "mean_023"], copy_gbps=110.0)
    new["workloads"][0]["times_ms"]["toy"] = 0.5
    merged = merge(old, new)
    assert [r["name"] for r in merged["workloads"]] == ["sin_cos", "softmax", "col_sum", "mean_023"]
    assert merged["workloads"][2]["times_ms"]["toy"] == 0.5  # this run's col_sum
    assert merged["machine"]["copy_gbps"] == 120.0  # the best of both runs
    assert merged["compile"] == {"toy": {"cold_s": 1.0}}  # not measured now: kept
    assert merged["merged_runs"] == 2


def test_results_of_another_machine_are_not_merged():
    with pytest.raises(SystemExit, match="device"):
        merge(result(["softmax"]), result(["sin_cos"], device="cpu"))
