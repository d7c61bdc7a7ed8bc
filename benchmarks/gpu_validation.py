"""Validate the GPU path on a machine with an NVIDIA GPU (prints figures; never run in CI).

What it checks, in one prepared run:

1. CUDA-synchronised timing through ``roofline(fn, sync=torch.cuda.synchronize)``: the per-call
   time of a bf16 GEMM measured by the plugin against CUDA events, and what timing without
   ``sync=`` would have reported (only the launch).
2. NVML counters over a measured test (clocks, power, energy, temperature, throttle reasons).
3. The target auto-detected from the NVML device name, and the H200 preset against a measured
   device copy (memory-bound) and a bf16 GEMM (compute-bound): achieved fraction of each roof
   and the bound class the plugin assigns.

Usage: python benchmarks/gpu_validation.py  (needs torch with CUDA; nvidia-ml-py for NVML)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

TESTS = """
import pytest, torch

def _sync():
    torch.cuda.synchronize()

@pytest.mark.roofline(owner="gpu-kernels", rollback="revert the kernel change")
def test_copy_1gib(roofline):
    n = 1 << 28                      # 2^28 fp32 = 1 GiB per buffer
    src = torch.empty(n, dtype=torch.float32, device="cuda")
    dst = torch.empty_like(src)
    roofline.declare(flops=0, bytes_moved=2 * src.numel() * 4, precision="fp32")
    roofline(dst.copy_, src, sync=_sync)

@pytest.mark.roofline(owner="gpu-kernels", rollback="revert the kernel change")
def test_gemm_bf16(roofline):
    n = 8192
    a = torch.randn(n, n, dtype=torch.bfloat16, device="cuda")
    b = torch.randn(n, n, dtype=torch.bfloat16, device="cuda")
    roofline.declare(flops=2 * n**3, bytes_moved=3 * n * n * 2, precision="bf16")
    roofline(torch.matmul, a, b, sync=_sync)

@pytest.mark.roofline(owner="gpu-kernels", budget="0.2s")
def test_gemm_bf16_without_sync(roofline):
    # Deliberately wrong: without sync= only the launch is timed.
    n = 8192
    a = torch.randn(n, n, dtype=torch.bfloat16, device="cuda")
    roofline.declare(flops=2 * n**3, bytes_moved=3 * n * n * 2, precision="bf16")
    roofline(torch.matmul, a, a)
    torch.cuda.synchronize()
"""


def cuda_event_ms() -> dict[str, float]:
    """Reference per-call times from CUDA events (median of 20)."""
    import torch

    def timed(fn, reps=20):
        times = []
        for _ in range(reps):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end))
        times.sort()
        return times[len(times) // 2]

    n = 8192
    a = torch.randn(n, n, dtype=torch.bfloat16, device="cuda")
    src = torch.empty(1 << 28, dtype=torch.float32, device="cuda")
    dst = torch.empty_like(src)
    for _ in range(3):
        torch.matmul(a, a)
        dst.copy_(src)
    torch.cuda.synchronize()
    return {
        "gemm_bf16_ms": timed(lambda: torch.matmul(a, a)),
        "copy_1gib_ms": timed(lambda: dst.copy_(src)),
    }


def main() -> None:
    import torch

    print(
        f"torch {torch.__version__}, cuda available: {torch.cuda.is_available()}, device: {torch.cuda.get_device_name(0)}"
    )
    try:
        import pynvml  # noqa: F401

        print("nvidia-ml-py: importable")
    except ImportError:
        print("nvidia-ml-py: NOT importable (NVML counters will be 'unsupported')")
    reference = cuda_event_ms()
    print(f"CUDA events: {json.dumps(reference)}")
    root = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        (project / "pytest.ini").write_text("[pytest]\n")
        (project / "test_gpu.py").write_text(textwrap.dedent(TESTS))
        env = {**os.environ, "PYTHONPATH": f"{root}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
        command = [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "pytest_roofline.plugin",
            "-p",
            "no:cacheprovider",
            "--roofline",
            "--roofline-target=auto",
            "--roofline-budget=2",
            "--roofline-json=out.json",
            "-q",
        ]
        done = subprocess.run(
            command, cwd=project, env=env, capture_output=True, text=True, check=False
        )
        print(done.stdout[-4000:])
        print(done.stderr[-2000:])
        document = json.loads((project / "out.json").read_text())
    target = document["run"]["target"]
    print(f"target: {target['name']} (source {target['source']})")
    for test in document["tests"]:
        point = test.get("roofline") or {}
        counters = test.get("counters") or {}
        nvml = {k: v for k, v in (counters.get("values") or {}).items() if k.startswith("nvml.")}
        nvml_status = {
            k: v for k, v in (counters.get("status") or {}).items() if k.startswith("nvml.")
        }
        print(
            f"\n{test['nodeid']}: n={test['samples']} batch={test['batch_size']} p50={test['p50_s'] * 1e3:.3f} ms "
            f"p99={test['p99_s'] * 1e3:.3f} ms stop={test['stop_reason']}"
        )
        print(
            f"  bound={point.get('bound')} efficiency={point.get('efficiency')} "
            f"achieved FLOP/s={point.get('achieved_flops_per_s')} bytes/s={point.get('achieved_bytes_per_s')} "
            f"data_error={point.get('data_error')}"
        )
        print(f"  counters completeness={counters.get('completeness')} nvml status={nvml_status}")
        print(f"  nvml values={nvml}")
        print(f"  notes={counters.get('notes')}")
    by_name = {t["nodeid"].split("::")[1]: t for t in document["tests"]}
    gemm = by_name.get("test_gemm_bf16")
    if gemm:
        print(
            f"\nsync check: plugin p50 {gemm['p50_s'] * 1e3:.3f} ms vs CUDA events {reference['gemm_bf16_ms']:.3f} ms "
            f"(ratio {gemm['p50_s'] * 1e3 / reference['gemm_bf16_ms']:.3f})"
        )
    copy = by_name.get("test_copy_1gib")
    if copy:
        print(
            f"copy: plugin p50 {copy['p50_s'] * 1e3:.3f} ms vs CUDA events {reference['copy_1gib_ms']:.3f} ms"
        )
    nosync = by_name.get("test_gemm_bf16_without_sync")
    if nosync:
        print(
            f"without sync=: plugin p50 {nosync['p50_s'] * 1e6:.1f} us (no sync: async launches queue up, so samples mix launch cost and kernel time), "
            f"data_error={(nosync.get('roofline') or {}).get('data_error')}"
        )


if __name__ == "__main__":
    main()
