#!/usr/bin/env python3
"""Summarises an `ncu --csv --page raw --metrics gpu__time_duration.sum` log: launches, total GPU
time, and per kernel its launches, total and mean time and share, largest first. Used by
bench/gpu_offload.sh's profile stage to set kernel time beside a step's wall time."""
import csv
import sys
from collections import defaultdict

TIME = "gpu__time_duration.sum"
SCALE_TO_US = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3,
               "second": 1e6, "s": 1e6}


def rows(path):
    with open(path, newline="") as log:
        lines = [line for line in log if not line.startswith("==")]
    reader = csv.reader(lines)
    header = next((row for row in reader if row and row[0] == "ID"), None)
    if header is None:
        sys.exit(f"{path}: no ncu CSV header (a row starting with \"ID\")")
    units = next(reader)
    name_col, time_col = header.index("Kernel Name"), header.index(TIME)
    scale = SCALE_TO_US.get(units[time_col])
    if scale is None:
        sys.exit(f"{path}: unknown time unit '{units[time_col]}' in column {TIME}")
    for row in reader:
        if len(row) > time_col and row[time_col]:
            yield row[name_col], float(row[time_col].replace(",", "")) * scale


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: ncu_step_summary.py NCU_CSV_LOG")
    per_kernel = defaultdict(lambda: [0, 0.0])
    for name, micros in rows(sys.argv[1]):
        entry = per_kernel[name]
        entry[0] += 1
        entry[1] += micros
    launches = sum(count for count, _ in per_kernel.values())
    total = sum(micros for _, micros in per_kernel.values())
    print(f"{launches} launches, {total / 1e3:.3f} ms of GPU time, {total / max(launches, 1):.1f} us a launch")
    print("| kernel | launches | total ms | mean us | share |")
    print("|---|---:|---:|---:|---:|")
    for name, (count, micros) in sorted(per_kernel.items(), key=lambda kv: -kv[1][1]):
        short = name if len(name) <= 70 else name[:67] + "..."
        print(f"| `{short}` | {count} | {micros / 1e3:.3f} | {micros / count:.1f} | "
              f"{100 * micros / max(total, 1e-9):.1f}% |")


if __name__ == "__main__":
    main()
