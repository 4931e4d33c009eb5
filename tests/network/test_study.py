"""scripts/netsim_study.py end to end on a small grid (run by CTest with the
build folder): every run made once, cached (a second invocation runs
nothing and gives the same report), the report's rows and intervals, and the
statistics' self-test on known samples."""
import json
import os
import subprocess
import sys
import tempfile

root, build = sys.argv[1], sys.argv[2]
script = os.path.join(root, "scripts", "netsim_study.py")
subprocess.run([sys.executable, script, "--self-test"], check=True)
with tempfile.TemporaryDirectory() as out:
    cmd = [sys.executable, script, "--grid", "quick", "--seeds", "3", "--schemes", "panama", "ring-rack",
           "--out", out, "--build-dir", build, "--parallel", "2"]
    first = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    assert "4 runs, 0 cached, 4 to run" in first, first
    report = json.load(open(os.path.join(out, "report.json")))
    second = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    assert "4 runs, 4 cached, 0 to run" in second, second
    assert json.load(open(os.path.join(out, "report.json")))["rows"] == report["rows"]
    assert [r["cell"] for r in report["rows"]] == ["load 0.3", "load 0.7"], report["rows"]
    for r in report["rows"]:
        e = r["schemes"]["ring-rack"]
        assert r["schemes"]["panama"]["short_flows"] >= 30 and e["short_flows"] >= 30, r
        for k in ("mean_ratio", "p99_ratio", "iteration_ratio"):
            point, lo, hi = e[k]
            assert lo <= point <= hi, (k, e[k])
        assert e["iteration_ratio"][0] > 1, e  # the ring moves more bytes than PANAMA on the same links
    assert os.path.exists(os.path.join(out, "fct_ratio.png"))
print("test_study: cached runs, report rows and intervals as expected")
