#!/usr/bin/env python3
"""Draw the W7 scaling curves of recordkeeper-bench from its CSV output.

    swift run -c release recordkeeper-bench --workloads W7 --output bench-results.csv
    python3 scripts/plot_bench.py bench-results.csv docs/scaling.png

Left: p50 latency of one single-record save (W2, durability normal) against the number of
records in the store. Right: whole-collection read throughput (W3) against N. Log-log axes.
The naive store's save latency is extrapolated linearly (it rewrites the whole file per
save) to the sizes it was not run at, drawn dashed.
"""

import csv
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

STYLES = {
    "raw": dict(color="#555555", marker="o", label="raw SQLite (C API)"),
    "RecordKeeper": dict(color="#1f77b4", marker="s", label="RecordKeeper (RecordStore)"),
    "naive": dict(color="#d62728", marker="^", label="naive whole-file JSON"),
}


def load(path):
    series = defaultdict(dict)  # (variant, metric, implementation) -> {n: value}
    with open(path, newline="") as handle:
        for row in csv.DictReader(handle):
            if row["workload"] != "W7":
                continue
            key = (row["variant"], row["metric"], row["implementation"])
            series[key][int(row["n"])] = float(row["value"])
    return series


def linear_extrapolation(points, sizes):
    """Least-squares fit value = a * n through the origin, evaluated at `sizes`."""
    numerator = sum(n * v for n, v in points.items())
    denominator = sum(n * n for n in points)
    slope = numerator / denominator
    return {n: slope * n for n in sizes}


def main():
    source = sys.argv[1] if len(sys.argv) > 1 else "bench-results.csv"
    target = sys.argv[2] if len(sys.argv) > 2 else "docs/scaling.png"
    series = load(source)
    if not series:
        sys.exit(f"{source}: no W7 rows (run the bench with W7 and --format csv / --output *.csv)")
    all_sizes = sorted({n for values in series.values() for n in values})

    figure, (left, right) = plt.subplots(1, 2, figsize=(12, 4.8))
    for implementation, style in STYLES.items():
        latency = series.get(("W2-normal", "p50_us", implementation), {})
        if latency:
            sizes = sorted(latency)
            left.plot(sizes, [latency[n] for n in sizes], **style)
            missing = [n for n in all_sizes if n > max(sizes)]
            if implementation == "naive" and missing:
                guess = linear_extrapolation(latency, missing)
                xs = [max(sizes)] + missing
                ys = [latency[max(sizes)]] + [guess[n] for n in missing]
                left.plot(xs, ys, linestyle="--", color=style["color"], label="naive, extrapolated (linear)")
                for n in missing:
                    left.annotate(f"~{guess[n] / 1e6:.1f} s", (n, guess[n]), textcoords="offset points",
                                  xytext=(-10, 6), ha="right", color=style["color"], fontsize=8)
        throughput = series.get(("W3", "records_per_s", implementation), {})
        if throughput:
            sizes = sorted(throughput)
            right_style = dict(style)
            if implementation == "naive":
                right_style["label"] = "naive (getAll from its in-memory dictionary)"
            right.plot(sizes, [throughput[n] for n in sizes], **right_style)

    left.set_title("W2: one single-record save (p50), durability normal")
    left.set_xlabel("records in the store (N)")
    left.set_ylabel("latency, µs (log)")
    right.set_title("W3: read the whole collection")
    right.set_xlabel("records in the collection (N)")
    right.set_ylabel("records per second (log)")
    for axis in (left, right):
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.grid(True, which="both", alpha=0.3)
        axis.legend(fontsize=8)
    figure.suptitle("recordkeeper-bench W7 scaling (same process, medians over repeats)")
    figure.tight_layout()
    figure.savefig(target, dpi=120)
    print(f"wrote {target}")


if __name__ == "__main__":
    main()
