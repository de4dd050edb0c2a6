#!/usr/bin/env python3
"""gemmlab report: merges `gemmlab sweep --json` and `gemmlab tune --json` results from one or more
machines (and the simulated systolic presets), the records of scripts/gpu-measure.sh (a GPU's
tuning runs against its vendor library), `gemmlab run --json` on the PTX simulator (counted, not
timed) and bench/blas_bench.py's results for the BLAS library, into DIR/index.html with PNG and
SVG plots and explanations computed from the numbers.

The first screen answers the headline question: one line per device (its best kernel at each
size, its vendor library dashed) and a short table with each device's figures at its largest
size. Every figure a reader should not trust unasked is flagged where it appears: a kernel above
its measured ceiling, a reference far below its speed elsewhere in the same sweep, a timing taken
while other work ran on the machine. Simulated and modelled figures say so.

Usage (normally through `gemmlab report --in FILE... --out DIR`):
    gemmlab_report.py --datasheets data/datasheets/devices.json --out DIR FILE...
"""
import argparse
import html
import json
import math
import os
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


class InputError(Exception):
    pass


# A reference this much slower than its fastest run at the same shape in the same sweep is flagged.
REFERENCE_SLOW_BELOW = 0.85


# --- inputs -------------------------------------------------------------------------------------


def upgrade_sweep(doc):
    """Sweeps of schema 1 (tests/data/report/) named two fields of a row differently: `time_s` in
    seconds is `time_ms` now, and `reference_gflops` is `reference.gflops` (the reference's name
    was only the document's)."""
    if doc.get("schema", 1) >= 2:
        return
    name = (doc.get("reference") or {}).get("name")
    for row in doc["results"]:
        if "time_s" in row:
            seconds = row.pop("time_s")
            row["time_ms"] = seconds * 1e3 if seconds is not None else None
        if "reference_gflops" in row:
            row["reference"] = {"name": name, "gflops": row.pop("reference_gflops")}


def reference_gflops(row):
    return (row.get("reference") or {}).get("gflops")


def is_gpu_record(doc):
    """A record of scripts/gpu-measure.sh around a `gemmlab tune --json` result."""
    return (isinstance(doc, dict) and "gpu-measure" in str(doc.get("script", "")) and isinstance(doc.get("result"), dict)
            and "best" in doc["result"])


def is_simulated_run(doc):
    """`gemmlab run --json` on a simulated CUDA device: counts, no time."""
    return isinstance(doc, dict) and doc.get("simulated") is True and isinstance(doc.get("simulated_counts"), dict)


def load_inputs(paths):
    inputs = {"sweeps": [], "tunes": [], "blas": [], "gpu_records": [], "simulated_runs": []}
    for path in paths:
        try:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
        except OSError as e:
            raise InputError(f"{path}: cannot be read ({e.strerror})")
        except json.JSONDecodeError as e:
            raise InputError(f"{path}: not JSON ({e})")
        docs = doc if isinstance(doc, list) and doc and all(is_simulated_run(d) for d in doc) else [doc]
        for d in docs:
            if isinstance(d, dict):
                d["_file"] = path
            if isinstance(d, dict) and d.get("kind") == "sweep":
                if not isinstance(d.get("results"), list) or "device" not in d:
                    raise InputError(f"{path}: a sweep without results or device")
                upgrade_sweep(d)
                inputs["sweeps"].append(d)
            elif is_gpu_record(d):
                if d.get("status") != "ok":
                    continue  # a failed step of the script: nothing measured
                inputs["gpu_records"].append(d)
            elif is_simulated_run(d):
                inputs["simulated_runs"].append(d)
            elif isinstance(d, dict) and "history" in d and "strategy" in d:
                inputs["tunes"].append(d)
            elif isinstance(d, dict) and d.get("kind") == "blas-bench":  # bench/blas_bench.py
                if not isinstance(d.get("results"), list) or not d["results"]:
                    raise InputError(f"{path}: a BLAS benchmark without results")
                inputs["blas"].append(d)
            else:
                raise InputError(f"{path}: neither `gemmlab sweep --json`, `gemmlab tune --json`, `gemmlab run --json` "
                                 "on a simulated device, a scripts/gpu-measure.sh record nor bench/blas_bench.py output")
    if not any(inputs.values()):
        raise InputError("no results given")
    return inputs


def load_datasheets(path):
    if not path or not os.path.exists(path):
        return [], {}
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    return doc.get("devices", []), doc.get("sources", {})


def datasheet_for(name, catalogue):
    for entry in catalogue:
        for pattern in entry.get("match", []):
            if re.search(pattern, name):
                return entry
    return None


def figure(entry, key):
    if not entry:
        return None
    f = entry.get("figures", {}).get(key)
    return f.get("value") if f else None


def is_square(row):
    return row["m"] == row["n"] == row["k"]


def ok(row):
    return row.get("valid") and row.get("gflops")


PEAK_KEY = {"fp32": "peak_fp32_gflops", "fp16": "peak_fp16_gflops", "bf16": "peak_bf16_gflops",
            "int8": "peak_int8_gops", "fp64": "peak_fp64_gflops"}


def unit(precision):
    return "GOP/s" if precision == "int8" else "GFLOP/s"


class Device:
    """One sweep: a device on a machine, with its datasheet entry, its ceilings and the flags of
    its rows."""

    def __init__(self, sweep, catalogue):
        self.sweep = sweep
        self.info = sweep["device"]
        self.backend = sweep["backend"]
        self.simulated = self.backend == "systolic"
        host = f", {sweep['host']}" if sweep.get("host") else ""
        self.label = f"{self.info['name']} [{self.backend}{host}]" + (" (simulated)" if self.simulated else "")
        self.short = self.info["name"] + (" array" if self.simulated else "")
        self.rows = [r for r in sweep["results"] if ok(r)]
        self.precision = self.rows[0]["precision"] if self.rows else "fp32"
        self.reference_name = (sweep.get("reference") or {}).get("name", "reference")
        self.reference_label = ("heuristic mapping (no library)" if self.reference_name == "heuristic"
                                else f"{self.reference_name} (library)")
        self.datasheet = datasheet_for(self.info["name"], catalogue)
        measured = self.info.get("measured") or {}
        # The ceiling "% of ceiling" is taken against. Measured on real hardware: the FMA
        # micro-benchmark at the sweep's precision. A simulated array: its model's peak, exact by
        # construction (its FMA micro-benchmark measures a loop's issue, not the array).
        if self.simulated:
            self.ceiling = self.info.get("peak_gflops_fp32") or None
            self.ceiling_label = "model peak"
        elif self.precision == "fp32":
            self.ceiling = measured.get("fma_gflops_fp32") or None
            self.ceiling_label = "measured FMA ceiling"
        elif self.precision == "fp64":
            self.ceiling = measured.get("fma_gflops_fp64") or None
            self.ceiling_label = "measured FMA ceiling"
        else:
            self.ceiling, self.ceiling_label = None, "ceiling"
        self.measured_bandwidth = measured.get("triad_gb_per_s") or None
        # A CPU datasheet covers a socket: scaled to the cores measured. A TPU datasheet covers a
        # chip: scaled to the one array of it a systolic preset simulates.
        scale = 1.0
        if self.datasheet and self.datasheet.get("kind") == "cpu" and self.datasheet.get("cores"):
            scale = self.info.get("cores", 0) / self.datasheet["cores"]
        arrays = re.search(r"(\d+) per chip", self.info.get("vendor", ""))  # "simulated 128x128 ..., 4 per chip"
        if self.simulated and arrays:
            scale = 1.0 / int(arrays.group(1))
        self.scale = scale
        ds_peak = figure(self.datasheet, PEAK_KEY.get(self.precision, "peak_fp32_gflops"))
        self.datasheet_peak = ds_peak * scale if ds_peak else None
        ds_bw = figure(self.datasheet, "memory_bandwidth_gb_per_s")
        self.datasheet_bandwidth = ds_bw * scale if ds_bw else None
        self.tdp = figure(self.datasheet, "tdp_w")
        self.price = figure(self.datasheet, "launch_price_usd")
        # The fastest reference at each shape in this sweep: a row's own reference far below it
        # was disturbed.
        self.fastest_reference = {}
        for r in self.rows:
            g = reference_gflops(r)
            if g:
                key = (r["m"], r["n"], r["k"])
                self.fastest_reference[key] = max(self.fastest_reference.get(key, 0), g)

    def bandwidth(self):
        return self.measured_bandwidth or self.datasheet_bandwidth

    def kernels(self):
        seen = []
        for r in self.rows:
            if r["kernel"] not in seen:
                seen.append(r["kernel"])
        return seen

    def square_sizes(self):
        return sorted({r["m"] for r in self.rows if is_square(r)})

    def row(self, kernel, size):
        for r in self.rows:
            if r["kernel"] == kernel and is_square(r) and r["m"] == size:
                return r
        return None

    def best_at(self, size):
        rows = [r for r in self.rows if is_square(r) and r["m"] == size]
        return max(rows, key=lambda r: r["gflops"]) if rows else None

    def flags(self, row):
        """Why a row's figures should not be taken at face value, one phrase each."""
        out = []
        if self.ceiling and row["gflops"] > self.ceiling:
            out.append(f"{row['gflops']:.1f} {unit(self.precision)} is above the {self.ceiling_label} "
                       f"({self.ceiling:.1f}): the ceiling was measured low or the timing is wrong")
        ref = reference_gflops(row)
        fastest = self.fastest_reference.get((row["m"], row["n"], row["k"]))
        if ref and fastest and ref < REFERENCE_SLOW_BELOW * fastest:
            out.append(f"{self.reference_name} ran at {ref:.1f} beside this kernel, {100 * (1 - ref / fastest):.0f}% below "
                       f"its {fastest:.1f} beside another in the same sweep")
        load = row.get("machine_load") or {}
        if load.get("disturbed"):
            out.append(f"other work took {load.get('others_cores', 0) + load.get('steal_cores', 0):.2f} cores "
                       "while this was timed")
        return out

    def own_ratio(self, row):
        """The kernel against the reference timed beside it, in alternation (never another row's)."""
        ref = reference_gflops(row)
        return row["gflops"] / ref if ref else None

    def footprint(self, row):
        memory = row.get("memory") or {}
        operands, workspace = memory.get("operands_bytes"), memory.get("workspace_bytes")
        return (operands, workspace) if operands else (None, None)


class GpuRecords:
    """A GPU measured by scripts/gpu-measure.sh: tuning runs of several kernels at a few square
    sizes, each kernel's best timed in alternation with the vendor library (cuBLAS)."""

    def __init__(self, records, catalogue):
        first = records[0]
        self.name = first["device"]["name"]
        self.records = records
        self.label = f"{self.name} [cuda, measured once]"
        self.short = self.name
        self.simulated = False
        self.datasheet = datasheet_for(self.name, catalogue)
        self.tdp = figure(self.datasheet, "tdp_w")
        self.price = figure(self.datasheet, "launch_price_usd")
        self.dates = sorted({r.get("date", "")[:10] for r in records})
        self.reference_label = "cuBLAS (library)"

    def precisions(self):
        return sorted({r["result"]["precision"] for r in self.records})

    def headline_precisions(self):
        """The first chart's lines: fp32 on the CUDA cores and the fastest tensor-core precision."""
        tensor = [p for p in ("bf16", "fp16", "int8") if p in self.precisions()]
        return [p for p in self.precisions() if p == "fp32"] + tensor[:1]

    def best(self, precision):
        """{size: (kernel, gflops, reference gflops)} of the fastest kernel at each size."""
        out = {}
        for r in self.records:
            t = r["result"]
            if t["precision"] != precision or not (t["m"] == t["n"] == t["k"]) or t["best"].get("status") != "ok":
                continue
            g = t["best"]["gflops"]
            ref = (t.get("reference") or {}).get("gflops")
            if t["m"] not in out or g > out[t["m"]][1]:
                out[t["m"]] = (t["kernel"], g, ref)
        return out

    def peak(self, precision):
        return figure(self.datasheet, PEAK_KEY.get(precision, "peak_fp32_gflops"))


# --- plots --------------------------------------------------------------------------------------


def save(fig, out, name):
    fig.tight_layout()
    for ext in ("png", "svg"):
        fig.savefig(os.path.join(out, f"{name}.{ext}"), dpi=110)
    plt.close(fig)
    return name


def empty_plot(out, name, title, message):
    fig, ax = plt.subplots(figsize=(7, 3))
    ax.set_title(title)
    ax.text(0.5, 0.5, message, ha="center", va="center", wrap=True)
    ax.set_axis_off()
    return save(fig, out, name)


def headline_devices(devices):
    """The devices of the first chart: each one's own sweep. A CPU's other backends (OpenCL through
    pocl, Kokkos on the host) run on the same chip: their lines belong to their own sections."""
    cpu_names = [d.info["name"] for d in devices if d.backend == "cpu"]
    def on_a_cpu(d):
        return "cpu" in d.info.get("features", []) or any(name in d.info["name"] for name in cpu_names)
    return [d for d in devices if d.square_sizes() and (d.backend in ("cpu", "systolic") or not on_a_cpu(d))]


def plot_headline(devices, gpus, unmeasured, out, points):
    """One line per device: its best kernel at each square size (solid; simulated dash-dotted
    with open markers), its vendor library dashed in the same colour, the datasheet peaks of
    devices not measured as dotted markers. Flagged points get a red ring. `points` collects
    every drawn measured point with its ceiling and flags, for the page's own check."""
    fig, ax = plt.subplots(figsize=(11, 5.8))
    drawn = False
    color_index = 0
    for d in headline_devices(devices):
        color = f"C{color_index % 10}"
        color_index += 1
        sizes = d.square_sizes()
        best = [(s, d.best_at(s)) for s in sizes if d.best_at(s)]
        xs, ys = [s for s, _ in best], [r["gflops"] for _, r in best]
        style = dict(linestyle="-.", marker="o", markerfacecolor="none") if d.simulated else dict(linestyle="-", marker="o")
        ax.plot(xs, ys, color=color, linewidth=2, label=f"{d.short}: best kernel, {d.precision}"
                + (", simulated" if d.simulated else ""), **style)
        for s, r in best:
            flags = d.flags(r)
            points.append({"device": d.label, "size": s, "gflops": r["gflops"], "ceiling": d.ceiling,
                           "simulated": d.simulated, "flagged": bool(flags)})
            if flags:
                ax.plot([s], [r["gflops"]], marker="o", markersize=14, markerfacecolor="none", markeredgecolor="red",
                        markeredgewidth=2, linestyle="none")
        if not d.simulated:
            # The reference timed beside the best kernel at each size: that row's own.
            ref = [(s, reference_gflops(r)) for s, r in best if reference_gflops(r)]
            if ref:
                ax.plot(*zip(*ref), linestyle="--", color=color, linewidth=1.3, label=f"{d.short}: {d.reference_label}")
        drawn = True
    for g in gpus:
        for precision in g.headline_precisions():
            color = f"C{color_index % 10}"
            color_index += 1
            best = sorted(g.best(precision).items())
            if not best:
                continue
            ax.plot([s for s, _ in best], [v[1] for _, v in best], color=color, marker="s", linewidth=2,
                    label=f"{g.short}: best kernel, {precision} (measured {', '.join(g.dates)})")
            ref = [(s, v[2]) for s, v in best if v[2]]
            if ref:
                ax.plot(*zip(*ref), linestyle="--", color=color, linewidth=1.3, label=f"{g.short}: {g.reference_label}, {precision}")
            peak = g.peak(precision)
            for s, v in best:
                points.append({"device": g.label, "size": s, "gflops": v[1], "ceiling": peak, "simulated": False,
                               "flagged": bool(peak and v[1] > peak)})
                if peak and v[1] > peak:
                    ax.plot([s], [v[1]], marker="o", markersize=14, markerfacecolor="none", markeredgecolor="red",
                            markeredgewidth=2, linestyle="none")
            drawn = True
    if not drawn:
        plt.close(fig)
        return empty_plot(out, "headline", "GFLOP/s against size", "no square sizes measured")
    right = ax.get_xlim()[1]
    for name, precision, peak in unmeasured:
        ax.plot([right * 0.8, right], [peak, peak], linestyle=":", linewidth=2.5, color="black")
        ax.annotate(f"{name}: datasheet {precision} peak {peak:,.0f} (not measured)", (right, peak), fontsize=7,
                    xytext=(-6, 4), textcoords="offset points", ha="right", color="black")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("M = N = K")
    ax.set_ylabel("GFLOP/s (GOP/s for int8)")
    ax.set_title("Each device's best kernel (solid; simulated: dash-dot) and its vendor library (dashed)", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    return save(fig, out, "headline")


def plot_device(d, index, out):
    """One device: every kernel's line, the reference dashed (the one timed beside the best kernel
    at each size: in a sweep every kernel of a shape shares one reference measurement), the
    ceiling dotted, flagged points ringed."""
    fig, ax = plt.subplots(figsize=(9, 4.8))
    sizes = d.square_sizes()
    for j, kernel in enumerate(d.kernels()):
        pts = [(s, d.row(kernel, s)) for s in sizes if d.row(kernel, s)]
        if not pts:
            continue
        marker = "os^vD<>ph*"[j % 10]
        ax.plot([s for s, _ in pts], [r["gflops"] for _, r in pts], marker=marker, label=kernel,
                linestyle="-." if d.simulated else "-")
        for s, r in pts:
            if d.flags(r):
                ax.plot([s], [r["gflops"]], marker="o", markersize=13, markerfacecolor="none", markeredgecolor="red",
                        markeredgewidth=2, linestyle="none")
    best = [(s, d.best_at(s)) for s in sizes if d.best_at(s)]
    ref = [(s, reference_gflops(r)) for s, r in best if reference_gflops(r)]
    if ref:
        ax.plot(*zip(*ref), linestyle="--", color="black", linewidth=1.5, label=f"{d.reference_label}, beside the best kernel")
    if d.ceiling:
        ax.axhline(d.ceiling, linestyle=":", color="grey", label=f"{d.ceiling_label} {d.ceiling:,.0f}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("M = N = K")
    ax.set_ylabel(unit(d.precision) + (" (simulated)" if d.simulated else ""))
    ax.set_title(f"{d.label}: every kernel, {d.precision}", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    return save(fig, out, f"device_{index}")


def plot_roofline(d, index, out):
    fig, ax = plt.subplots(figsize=(7, 5))
    size = max(d.square_sizes()) if d.square_sizes() else None
    points = [(r["kernel"], r["arithmetic_intensity"], r["gflops"], d.flags(r)) for r in d.rows
              if size and is_square(r) and r["m"] == size and r.get("arithmetic_intensity")]
    intensities = [p[1] for p in points] or [1.0]
    lo, hi = min(intensities) / 8, max(intensities) * 8
    xs = [lo * (hi / lo) ** (i / 100) for i in range(101)]
    measured_name = d.ceiling_label
    for peak, bw, style, name in ((d.ceiling, d.measured_bandwidth, "-", measured_name),
                                  (d.datasheet_peak, d.datasheet_bandwidth, ":", "datasheet peak")):
        if peak and bw:
            ax.plot(xs, [min(peak, bw * x) for x in xs], style, color="k",
                    label=f"{name}: {peak:,.0f} {unit(d.precision)}, {bw:.1f} GB/s")
        elif peak:
            ax.axhline(peak, linestyle=style, color="k", label=f"{name} {peak:,.0f} {unit(d.precision)}")
    for kernel, ai, g, flags in points:
        ax.plot([ai], [g], "o", markeredgecolor="red" if flags else None, markeredgewidth=2 if flags else 1)
        ax.annotate(kernel + (" (flagged)" if flags else ""), (ai, g), fontsize=7, xytext=(3, 3), textcoords="offset points",
                    color="red" if flags else "black")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity of the tiling (FLOP per byte moved)")
    ax.set_ylabel(unit(d.precision))
    ax.set_title(f"Roofline: {d.label}" + (f", {size}³" if size else ""), fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    return save(fig, out, f"roofline_{index}")


def plot_staircase(devices, out):
    with_rows = [d for d in devices if d.square_sizes()]
    if not with_rows:
        return empty_plot(out, "staircase", "Curriculum staircase", "no square sizes in the sweeps")
    fig, axes = plt.subplots(len(with_rows), 1, figsize=(9, 3.2 * len(with_rows)), squeeze=False)
    for ax, d in zip(axes[:, 0], with_rows):
        size = max(d.square_sizes())
        kernels = [k for k in d.kernels() if d.row(k, size)]
        rows = [d.row(k, size) for k in kernels]
        values = [r["gflops"] for r in rows]
        bars = ax.bar(range(len(kernels)), values, color=["C3" if d.flags(r) else "C0" for r in rows])
        for b, r in zip(bars, rows):
            ratio = d.own_ratio(r)
            label = f"{100 * ratio:.0f}% of {d.reference_name}" if ratio else ""
            if d.flags(r):
                label += "\n(flagged)"
            ax.annotate(f"{r['gflops']:.1f}\n{label}", (b.get_x() + b.get_width() / 2, r["gflops"]), ha="center",
                        va="bottom", fontsize=7)
        if d.ceiling:
            ax.axhline(d.ceiling, linestyle=":", color="grey", label=f"{d.ceiling_label} {d.ceiling:,.0f}")
            ax.legend(fontsize=7, loc="upper left")
        ax.set_xticks(range(len(kernels)))
        ax.set_xticklabels(kernels, rotation=20, fontsize=7)
        ax.set_ylabel(unit(d.precision))
        ax.set_ylim(0, max(values + [d.ceiling or 0]) * 1.35)
        ax.set_title(f"{d.label}, {size}³: each step against the {d.reference_label} timed beside it", fontsize=9)
    return save(fig, out, "staircase")


def best_so_far(history):
    best, curve = 0.0, []
    for e in history:
        if e.get("status") == "ok":
            best = max(best, e.get("gflops", 0.0))
        curve.append(best)
    return curve


def plot_convergence(tunes, out):
    if not tunes:
        return empty_plot(out, "convergence", "Tuning convergence",
                          "no tuning runs given (pass `gemmlab tune --json` output to --in)")
    fig, ax = plt.subplots(figsize=(8, 5))
    for t in tunes:
        curve = best_so_far(t["history"])
        ax.plot(range(1, len(curve) + 1), curve,
                label=f"{t['strategy']} seed {t.get('seed')}: {t['kernel']} {t['m']}x{t['n']}x{t['k']} ({t['device']})")
    ax.set_xlabel("evaluations")
    ax.set_ylabel("best GFLOP/s so far")
    ax.set_title("Tuning convergence per strategy")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    return save(fig, out, "convergence")


def heatmap_data(tune):
    rows = [e for e in tune["history"] if e.get("status") == "ok"]
    if not rows:
        return None
    names = sorted(rows[0]["params"].keys(), key=lambda n: -len({e["params"].get(n) for e in rows}))
    names = [n for n in names if len({e["params"].get(n) for e in rows}) > 1]
    if len(names) < 2:
        return None
    x, y = names[0], names[1]
    xs = sorted({e["params"][x] for e in rows})
    ys = sorted({e["params"][y] for e in rows})
    grid = [[math.nan for _ in xs] for _ in ys]
    for e in rows:
        i, j = ys.index(e["params"][y]), xs.index(e["params"][x])
        if math.isnan(grid[i][j]) or e["gflops"] > grid[i][j]:
            grid[i][j] = e["gflops"]
    return x, y, xs, ys, grid


def plot_heatmap(tunes, out):
    candidates = [(t, heatmap_data(t)) for t in tunes]
    candidates = [(t, h) for t, h in candidates if h]
    if not candidates:
        return empty_plot(out, "heatmap", "GFLOP/s over two tile parameters",
                          "no tuning run with two varied parameters given")
    tune, (x, y, xs, ys, grid) = max(candidates, key=lambda c: len(c[0]["history"]))
    fig, ax = plt.subplots(figsize=(7, 5.5))
    image = ax.imshow(grid, origin="lower", cmap="viridis", aspect="auto")
    ax.set_xticks(range(len(xs)))
    ax.set_xticklabels(xs)
    ax.set_yticks(range(len(ys)))
    ax.set_yticklabels(ys)
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    for i in range(len(ys)):
        for j in range(len(xs)):
            if not math.isnan(grid[i][j]):
                ax.text(j, i, f"{grid[i][j]:.0f}", ha="center", va="center", fontsize=6, color="w")
    fig.colorbar(image, label="best GFLOP/s (other parameters free)")
    ax.set_title(f"{tune['kernel']} {tune['m']}x{tune['n']}x{tune['k']} on {tune['device']} ({tune['strategy']})",
                 fontsize=9)
    return save(fig, out, "heatmap")


def plot_blas(rows, path, formats=("png", "svg")):
    """The BLAS library against each peer, per shape: gemmlab's time over the peer's (> 1: gemmlab
    faster), one panel per precision and thread count, timed in alternating blocks in one process
    (a row's "ratio": with several rounds, the median of the rounds' ratios)."""
    groups = sorted({(r["precision"], r["threads"]) for r in rows})
    fig, axes = plt.subplots(len(groups), 1, figsize=(14, 3.8 * len(groups)), squeeze=False)
    for ax, (precision, threads) in zip(axes[:, 0], groups):
        mine = [r for r in rows if r["precision"] == precision and r["threads"] == threads]
        shapes = list(dict.fromkeys(r["shape"] for r in mine))
        peers = list(dict.fromkeys(r["peer"] for r in mine))
        width = 0.8 / len(peers)
        for j, peer in enumerate(peers):
            ratios = [next((r.get("ratio") or r["gemmlab_gflops"] / r["peer_gflops"]
                            for r in mine if r["shape"] == shape and r["peer"] == peer), 0) for shape in shapes]
            ax.bar([i + j * width for i in range(len(shapes))], ratios, width, label=f"against {peer}")
        ax.axhline(1.0, color="black", linewidth=1)
        ax.axhline(0.9, color="grey", linewidth=0.8, linestyle=":")
        ax.set_yscale("log", base=2)
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(shapes))])
        ax.set_xticklabels(shapes, rotation=60, ha="right", fontsize=7)
        ax.set_ylabel("gemmlab / peer (GFLOP/s)")
        ax.set_title(f"libgemmlab_blas.so against each peer: {precision}, {threads} thread(s) (measured; above 1: gemmlab faster)")
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=7, ncol=len(peers))
    fig.tight_layout()
    for ext in formats:
        fig.savefig(os.path.splitext(path)[0] + "." + ext, dpi=110)
    plt.close(fig)
    return path


def blas_section(doc, out):
    """The report's section on the BLAS library: its plot and the bar's summary."""
    name = "blas_vs_peers"
    plot_blas(doc["results"], os.path.join(out, name + ".png"))
    def shares(b):
        """The large squares' shares of the FMA ceiling: of the run's ceiling, and of the FMA loop
        timed beside each (records before it have the first only)."""
        run = b.get("large_square_shares") or {}
        beside = b.get("large_square_shares_beside_fma_loop") or {}
        if not run and not beside:
            return "—"
        parts = []
        for shape in sorted(set(run) | set(beside), key=lambda s: int(s.split("x")[0])):
            text = f"{shape} {100 * run[shape]:.0f}%" if shape in run else shape
            if shape in beside:
                text += f" ({100 * beside[shape]:.0f}% beside the loop)"
            parts.append(text)
        ceiling = f"of {b['fma_ceiling_gflops']:.1f} GFLOP/s: " if b.get("fma_ceiling_gflops") else ""
        return html.escape(ceiling + ", ".join(parts))

    rows = "".join(
        f"<tr><td>{html.escape(b['precision'])}</td><td>{b['threads']}</td><td>{b['geomean_ratio']:.2f}</td>"
        f"<td>{html.escape(b['worst_shape'])} ({b['worst_ratio']:.2f})</td><td>{shares(b)}</td></tr>"
        for b in doc.get("bar", []))
    peers = sorted({f"{r['peer']}: {r.get('peer_version', '')}" for r in doc["results"]})
    return (f"<h2>The BLAS library against its peers</h2><p>{html.escape(os.path.basename(doc['_file']))}, measured "
            f"{html.escape(str(doc.get('date', '')))} at {html.escape(str(doc.get('commit', '')))} on "
            f"{html.escape(str((doc.get('device') or {}).get('name', '')))}; peers: "
            f"{html.escape('; '.join(peers))}.</p>"
            f"<figure><img src=\"{name}.png\" alt=\"{name}\"><figcaption>gemmlab's GFLOP/s over each peer's, per shape "
            f"(one process per thread count, alternating blocks on the same buffers). <a href=\"{name}.svg\">SVG</a>"
            f"</figcaption></figure>"
            f"<table><tr><th>precision</th><th>threads</th><th>geometric mean of gemmlab / best peer</th>"
            f"<th>worst shape</th><th>large squares: share of the measured FMA ceiling (85% wanted)</th></tr>"
            f"{rows}</table>")



# --- explanations -------------------------------------------------------------------------------

LIMIT_KINDS = [("register", "registers"), ("VGPR", "registers"), ("zmm", "registers"), ("shared memory", "shared memory"),
               ("LDS", "LDS"), ("local memory", "local memory"), ("cache", "cache"), ("L1", "cache"), ("L2", "cache"),
               ("buffer", "the array's buffers"), ("array", "the array dimension"), ("threads", "threads per block"),
               ("work-items", "work-group size")]


def constraint_text(c):
    """A growth limit's constraint as one line: {"expression", "why"} as "expression (why)"; older
    files have the text alone."""
    if isinstance(c, str):
        return c
    return f"{c['expression']} ({c['why']})" if c.get("why") else c["expression"]


def limit_kind(c):
    """What a constraint protects, from the words of its why and expression."""
    text = constraint_text(c)
    for word, kind in LIMIT_KINDS:
        if word.lower() in text.lower():
            return kind
    return "the space's own rules"




def explain_kernels(d):
    """What the numbers say about each kernel of a device, once per kernel: how it moves with
    size (share of the ceiling and of the reference at the smallest and largest size), what bounds
    it at the largest size, and why its tiles stopped growing."""
    lines = []
    balance = d.ceiling / d.bandwidth() if d.ceiling and d.bandwidth() else None
    sizes = d.square_sizes()
    for kernel in d.kernels():
        rows = [(s, d.row(kernel, s)) for s in sizes if d.row(kernel, s)]
        if not rows:
            continue
        (s0, r0), (s1, r1) = rows[0], rows[-1]
        u = unit(d.precision) + (" (simulated)" if d.simulated else "")
        text = f"{kernel}: {r1['gflops']:,.1f} {u} at {s1}³"
        if d.ceiling:
            text += f" ({100 * r1['gflops'] / d.ceiling:.0f}% of the {d.ceiling_label}"
            text += f"; {100 * r0['gflops'] / d.ceiling:.0f}% at {s0}³)" if s0 != s1 else ")"
        ratio0, ratio1 = d.own_ratio(r0), d.own_ratio(r1)
        if ratio1:
            text += f", {ratio1:.2f}× the {d.reference_label} timed beside it"
            if s0 != s1 and ratio0:
                text += f" ({ratio0:.2f}× at {s0}³)"
        ai = r1.get("arithmetic_intensity")
        if ai and balance:
            bound = "memory-bound" if ai < balance else "compute-bound"
            text += (f". Its tiling moves {r1['bytes_moved'] / 1e6:.1f} MB at {s1}³, {ai:.1f} FLOP/byte against a "
                     f"machine balance of {balance:.1f}: {bound}")
        elif not ai:
            text += ". It has no tile parameter, so its traffic is not estimated"
        if s0 != s1:
            change = r1["gflops"] / r0["gflops"]
            if change > 1.15:
                text += (f". From {s0}³ to {s1}³ it gains {change:.1f}×: "
                         + small_size_reason(d, r0, s0))
            elif change < 0.87:
                text += (f". From {s0}³ to {s1}³ it loses {100 * (1 - change):.0f}%: its working set outgrows the caches "
                         "it was blocked for")
            else:
                text += f". Its speed hardly changes from {s0}³ to {s1}³"
        limits = [lim for lim in r1.get("growth_limits", []) if lim.get("constraints")]
        if limits:
            kinds = sorted({limit_kind(c) for lim in limits for c in lim["constraints"]})
            names = ", ".join(f"{lim['parameter']}={lim['value']}" for lim in limits)
            text += f". Its tiles ({names}) could not grow further because of {', '.join(kinds)}"
            text += " (" + "; ".join(sorted({constraint_text(c) for lim in limits for c in lim["constraints"]})[:3]) + ")"
        source = r1.get("config_source", "")
        text += f" [{'tuned' if source.startswith('tuned') else 'default'} configuration at {s1}³]."
        for flag in d.flags(r1):
            text += f" Flagged: {flag}."
        lines.append(text)
    return lines


def small_size_reason(d, row, size):
    """Why a device does worse on a small problem, in terms of what it has."""
    if d.backend == "systolic":
        return ("at a small size the array's fill and drain and the loads of each tile's operands are a "
                "larger share of the time")
    if d.backend == "cpu":
        return "at a small size packing, thread start-up and the edges of the tiles are a larger share of the time"
    tiles, cores = row.get("parallel_tiles"), d.info.get("cores")
    if tiles and cores and tiles < 2 * cores:
        return f"{tiles} tiles of C at {size}³ for {cores} compute units leave the device under-used"
    return "a small problem leaves a large device under-used"


def fmt(value, digits=1, suffix=""):
    return "—" if value is None else f"{value:,.{digits}f}{suffix}"


def megabytes(value):
    return "—" if value is None else f"{value / 2**20:,.1f}"


def flag_cell(flags):
    if not flags:
        return "<td></td>"
    return ("<td class=\"flag\" title=\"" + html.escape("; ".join(flags)) + "\">⚠ " + html.escape("; ".join(flags))
            + "</td>")


def headline_rows(devices, gpus):
    """One entry per device at its largest measured size: the first screen's table."""
    entries = []
    for d in headline_devices(devices):
        size = max(d.square_sizes())
        r = d.best_at(size)
        entries.append({"device": d.short, "how": "simulated" if d.simulated else f"measured ({d.backend})",
                        "precision": d.precision, "size": size, "kernel": r["kernel"], "gflops": r["gflops"],
                        "unit": unit(d.precision), "reference": d.reference_label, "ratio": d.own_ratio(r),
                        "ceiling": d.ceiling, "ceiling_label": d.ceiling_label, "flags": d.flags(r), "cpu": d.backend == "cpu"})
    for g in gpus:
        for precision in g.headline_precisions():
            best = g.best(precision)
            if not best:
                continue
            size = max(best)
            kernel, gflops, ref = best[size]
            peak = g.peak(precision)
            entries.append({"device": g.short, "how": f"measured once ({', '.join(g.dates)})", "precision": precision,
                            "size": size, "kernel": kernel, "gflops": gflops, "unit": unit(precision),
                            "reference": g.reference_label, "ratio": gflops / ref if ref else None, "ceiling": peak,
                            "ceiling_label": "datasheet peak (no measured ceiling)",
                            "flags": [f"above the datasheet peak {peak:,.0f}"] if peak and gflops > peak else [],
                            "cpu": False})
    return entries


HEADLINE_COLUMNS = ["device", "how", "precision", "largest size", "best kernel", "speed",
                    "against its reference (timed beside it)", "share of the ceiling", "× this CPU", "flags"]


def headline_cells(entries, unmeasured):
    """The first screen's table as plain text, one list of cells per row (the HTML page and
    summary.md both print these), and each row's flags."""
    cpu = next((e for e in entries if e["cpu"]), None)
    rows = []
    for e in entries:
        share = fmt(100 * e["gflops"] / e["ceiling"] if e["ceiling"] else None, 0, "%")
        ceiling = f" {e['ceiling']:,.0f}" if e["ceiling"] else ""
        times_cpu = "1×" if e["cpu"] else fmt(e["gflops"] / cpu["gflops"] if cpu else None, 1, "×")
        rows.append(([e["device"], e["how"], e["precision"], f"{e['size']}³", e["kernel"], f"{e['gflops']:,.1f} {e['unit']}",
                      f"{fmt(e['ratio'], 2, '×')} {e['reference']}", f"{share} of the {e['ceiling_label']}{ceiling}",
                      times_cpu], e["flags"]))
    for name, precision, peak in unmeasured:
        rows.append(([name, "not measured", precision, "—", "—", "—", "—", f"datasheet peak {peak:,.0f}", "—"], []))
    return rows


def headline_quote(entries):
    """The quotable ratios: the fastest simulated array, and every device measured besides the CPU."""
    cpu = next((e for e in entries if e["cpu"]), None)
    if not cpu:
        return []
    arrays = [e for e in entries if "simulated" in e["how"]]
    quoted = ([max(arrays, key=lambda e: e["gflops"])] if arrays else []) + [
        e for e in entries if "simulated" not in e["how"] and not e["cpu"]]
    return [f"one {e['device']} ({e['precision']}{', simulated' if 'simulated' in e['how'] else ''}): "
            f"{e['gflops'] / cpu['gflops']:,.1f}× this CPU ({cpu['device']}, {cpu['precision']}, "
            f"{cpu['gflops']:,.1f} {cpu['unit']} at {cpu['size']}³)" for e in quoted]


def headline_section(entries, unmeasured):
    rows = []
    for cells, flags in headline_cells(entries, unmeasured):
        css = " class=\"unmeasured\"" if cells[1] == "not measured" else ""
        rows.append(f"<tr{css}>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + flag_cell(flags) + "</tr>")
    sentences = headline_quote(entries)
    quote = ("<p class=\"quote\">At each device's largest size: " + "; ".join(html.escape(s) for s in sentences) + ".</p>"
             if sentences else "")
    return ("<section id=\"headline\"><table id=\"headline-table\"><tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in HEADLINE_COLUMNS)
            + "</tr>" + "".join(rows) + "</table>" + quote + "</section>")


def headline_markdown(entries, unmeasured):
    """The first screen's table as Markdown (DIR/summary.md), for the README."""
    lines = ["| " + " | ".join(HEADLINE_COLUMNS) + " |", "|" + "---|" * len(HEADLINE_COLUMNS)]
    for cells, flags in headline_cells(entries, unmeasured):
        lines.append("| " + " | ".join(cells) + f" | {'; '.join(flags) or '–'} |")
    return "\n".join(lines) + "\n"


def device_table(d, sources):
    """Every kernel of a device at its largest size, beside the datasheet: time, speed, shares,
    efficiency, memory footprint and flags."""
    size = max(d.square_sizes())
    ds = d.datasheet
    if ds:
        cited = sorted({f["source"] for f in ds.get("figures", {}).values()})
        links = ", ".join(f"<a href=\"{html.escape(sources.get(s, {}).get('url', '#'))}\">{html.escape(s)}</a>" for s in cited)
        scale = ""
        if d.scale != 1:
            scale = (f" (× {d.scale:.3f}: {d.info.get('cores')} of {ds.get('cores')} cores)" if ds.get("kind") == "cpu"
                     else f" (× {d.scale:.3f}: one simulated array of the chip)")
        sheet = (f"Datasheet: {html.escape(ds['name'])}{scale}: {fmt(d.datasheet_peak, 0)} {unit(d.precision)}, "
                 f"{fmt(d.datasheet_bandwidth, 1)} GB/s, TDP {fmt(d.tdp, 0)} W, launch price ${fmt(d.price, 0)}; {links}.")
    else:
        sheet = "Not in the datasheet catalogue."
    u = unit(d.precision) + (" (simulated)" if d.simulated else "")
    head = (f"<tr><th>kernel</th><th>time (ms)</th><th>{u}</th><th>% of the {html.escape(d.ceiling_label)}</th>"
            f"<th>% of the datasheet peak</th><th>% of the {html.escape(d.reference_label)} timed beside it</th>"
            f"<th>{u} per W (measured)</th><th>{u} per W (estimate: datasheet TDP)</th><th>{u} per $ (launch price)</th>"
            "<th>memory: operands + kernel's own (MiB)</th><th>flags</th></tr>")
    rows = []
    for kernel in d.kernels():
        r = d.row(kernel, size)
        if not r:
            continue
        g = r["gflops"]
        power = ((r.get("power") or {}).get("kernel") or {})
        watts = power.get("watts")
        per_w = f"{g / watts:.2f}" + (f" ({power['temperature_c']:.0f} °C)" if power.get("temperature_c") else "") if watts \
            else "not measured"
        operands, workspace = d.footprint(r)
        memory = (f"{megabytes(operands)} + {megabytes(workspace)}" if operands and workspace is not None
                  else f"{megabytes(operands)} + not measured" if operands else "not recorded")
        ratio = d.own_ratio(r)
        rows.append(
            f"<tr><td>{html.escape(kernel)}</td><td>{fmt(r.get('time_ms'), 3)}</td><td>{g:,.1f}</td>"
            f"<td>{fmt(100 * g / d.ceiling if d.ceiling else None, 1, '%')}</td>"
            f"<td>{fmt(100 * g / d.datasheet_peak if d.datasheet_peak else None, 1, '%')}</td>"
            f"<td>{fmt(100 * ratio if ratio else None, 1, '%')}</td><td>{per_w}</td>"
            f"<td>{fmt(g / (d.tdp * d.scale) if d.tdp else None, 3)}</td>"
            f"<td>{fmt(g / (d.price * d.scale) if d.price else None, 4)}</td><td>{memory}</td>{flag_cell(d.flags(r))}</tr>")
    return (f"<p>{size}³, {d.precision}. {sheet} Power: {html.escape(d.sweep.get('power_source', 'not measured'))}.</p>"
            f"<table>{head}{''.join(rows)}</table>")


def gpu_section(g):
    rows = []
    for precision in g.precisions():
        for size, (kernel, gflops, ref) in sorted(g.best(precision).items()):
            peak = g.peak(precision)
            rows.append(f"<tr><td>{precision}</td><td>{size}³</td><td>{html.escape(kernel)}</td><td>{gflops:,.0f}</td>"
                        f"<td>{fmt(gflops / ref if ref else None, 2, '×')}</td>"
                        f"<td>{fmt(100 * gflops / peak if peak else None, 0, '%')}</td>"
                        f"<td>{fmt(gflops / g.tdp if g.tdp else None, 1)}</td></tr>")
    files = ", ".join(sorted({os.path.basename(r["_file"]) for r in g.records}))
    return (f"<h3>{html.escape(g.label)}</h3><p>Measured on {', '.join(g.dates)} by scripts/gpu-measure.sh: short tuning "
            f"runs, each kernel's best timed in alternation with cuBLAS in the same process ({html.escape(files)}). Power "
            "read there is left out: the board's reading averages over a window far longer than these millisecond runs. "
            "Per W below is an estimate from the datasheet TDP.</p><table><tr><th>precision</th><th>size</th><th>best kernel</th>"
            "<th>GFLOP/s</th><th>× cuBLAS</th><th>% of the datasheet peak</th><th>GFLOP/s per W (estimate: TDP)</th></tr>"
            + "".join(rows) + "</table>")


def simulated_counts_section(runs):
    """Counted, not timed: each CUDA kernel on the PTX simulator."""
    if not runs:
        return ""
    rows = []
    for r in runs:
        c = r["simulated_counts"]
        flops = c.get("fma_flops", 0) + c.get("tensor_flops", 0)
        sectors = c.get("global_load_sectors", 0) / c["global_load_requests"] if c.get("global_load_requests") else None
        waves = c.get("shared_wavefronts", 0) / c["shared_requests"] if c.get("shared_requests") else None
        intensity = flops / c["global_unique_bytes"] if c.get("global_unique_bytes") else None
        rows.append(f"<tr><td>{html.escape(r['kernel'])}</td><td>{r['precision']}</td><td>{r['m']}³</td>"
                    f"<td>{c.get('warp_instructions', 0):,.0f}</td><td>{c.get('fma_flops', 0):,.0f}</td>"
                    f"<td>{c.get('tensor_flops', 0):,.0f}</td><td>{fmt(sectors, 1)}</td><td>{fmt(waves, 2)}</td>"
                    f"<td>{fmt(intensity, 1)}</td><td>{c.get('registers_per_thread', 0):.0f}</td>"
                    f"<td>{c.get('shared_bytes_per_block', 0) / 1024:.0f}</td><td>{c.get('barriers', 0):,.0f}</td></tr>")
    device = runs[0].get("device", "")
    return ("<h3>NVIDIA, on the PTX simulator: counted, not timed</h3>"
            f"<p>Each CUDA kernel at its default configuration on the simulated {html.escape(device)} "
            "(`gemmlab run --backend cuda`): what the hardware would be asked to do, counted by the simulator. These are "
            "not speeds and are never drawn as GFLOP/s.</p><table><tr><th>kernel</th><th>precision</th><th>size</th>"
            "<th>warp instructions</th><th>FLOPs on the FMA pipe</th><th>FLOPs on tensor cores</th>"
            "<th>global sectors per load request (4 = coalesced fp32)</th><th>shared wavefronts per request (1 = no bank "
            "conflict)</th><th>FLOP per unique global byte</th><th>registers per thread</th><th>shared KiB per block</th>"
            "<th>barriers</th></tr>" + "".join(rows) + "</table>")


def unmeasured_devices(catalogue, devices, gpus):
    """The vendors' devices the report has no measurement of, from the datasheet catalogue: an
    AMD GPU (the HIP backend compiles for gfx940, MI300's target) and, where no NVIDIA GPU was
    measured, the H100 the simulator models. Their peaks are drawn as dotted markers."""
    measured = " ".join([d.info["name"] for d in devices] + [g.name for g in gpus])
    out = []
    for pattern, precision in (("MI300X", "fp32"), ("H100 SXM5", "fp32")):
        entry = next((e for e in catalogue if pattern in e["name"]), None)
        if not entry or any(re.search(p, measured) for p in entry.get("match", [])):
            continue
        peak = figure(entry, PEAK_KEY[precision])
        if peak:
            out.append((entry["name"].split(" (")[0], precision, peak))
    return out


def write_page(out, inputs, devices, gpus, plots, sources, catalogue, points, extra=""):
    unmeasured = unmeasured_devices(catalogue, devices, gpus)
    entries = headline_rows(devices, gpus)
    with open(os.path.join(out, "summary.md"), "w", encoding="utf-8") as f:
        f.write(headline_markdown(entries, unmeasured))
    inputs_list = [d.sweep["_file"] for d in devices] + [t["_file"] for t in inputs["tunes"]]
    inputs_list += sorted({r["_file"] for r in inputs["gpu_records"]}) + sorted({r["_file"] for r in inputs["simulated_runs"]})
    parts = ["<!doctype html><html><head><meta charset=\"utf-8\"><title>gemmlab report</title><style>"
             "body{font-family:sans-serif;max-width:1250px;margin:auto}table{border-collapse:collapse;font-size:12px}"
             "td,th{border:1px solid #ccc;padding:3px 6px}img{max-width:100%}.flag{color:#b00000}"
             ".quote{font-size:15px}.unmeasured{color:#777}h1{font-size:22px}</style></head><body>",
             "<h1>GEMM on a CPU, an NVIDIA GPU, an AMD GPU and a systolic array: speed, the vendor library, the peak</h1>"]
    parts.append(f"<figure id=\"headline-chart\"><img src=\"{plots[0]}.png\" alt=\"headline\"><figcaption>Each device's best "
                 "kernel at each size (solid: measured; dash-dot, open markers: simulated) and its vendor library timed "
                 "beside it (dashed). Red rings: flagged figures (see the table). Black dotted at the right: datasheet "
                 f"peaks of devices not measured. <a href=\"{plots[0]}.svg\">SVG</a></figcaption></figure>")
    parts.append(headline_section(entries, unmeasured))
    flagged = [(d, r) for d in devices for r in d.rows if d.flags(r)]
    if flagged:
        parts.append("<h2>Warnings</h2><ul class=\"flag\">" + "".join(
            f"<li>{html.escape(d.label)}, {html.escape(r['kernel'])} {r['m']}x{r['n']}x{r['k']}: "
            f"{html.escape('; '.join(d.flags(r)))}</li>" for d, r in flagged) + "</ul>")
    parts.append("<h2>Devices</h2><ul>")
    for d in devices:
        s = d.sweep
        parts.append(f"<li><b>{html.escape(d.label)}</b>: {'simulated' if d.simulated else 'measured'} "
                     f"{html.escape(s.get('date', ''))} by <code>{html.escape(s.get('command', ''))}</code>; reference "
                     f"{html.escape(d.reference_label)} {html.escape(s['reference'].get('version', ''))}; "
                     f"{html.escape(d.ceiling_label)} {fmt(d.ceiling, 1)} {unit(d.precision)}, triad bandwidth "
                     f"{fmt(d.measured_bandwidth, 1)} GB/s; power: {html.escape(s.get('power_source', 'not measured'))}</li>")
    for g in gpus:
        parts.append(f"<li><b>{html.escape(g.label)}</b>: measured {', '.join(g.dates)} by scripts/gpu-measure.sh</li>")
    for name, precision, peak in unmeasured:
        parts.append(f"<li><b>{html.escape(name)}</b>: not measured; its datasheet {precision} peak, {peak:,.0f} GFLOP/s, "
                     "is a dotted marker</li>")
    parts.append("</ul><p>Inputs: " + ", ".join(html.escape(os.path.basename(p)) for p in inputs_list) + "</p>")
    for i, d in enumerate(devices):
        if not d.square_sizes():
            continue
        parts.append(f"<h2>{html.escape(d.label)}</h2>")
        parts.append(f"<figure><img src=\"device_{i}.png\" alt=\"device_{i}\"><figcaption>Every kernel against size; "
                     f"the {html.escape(d.reference_label)} timed beside the best kernel dashed. "
                     f"<a href=\"device_{i}.svg\">SVG</a></figcaption></figure>")
        parts.append(f"<figure><img src=\"roofline_{i}.png\" alt=\"roofline_{i}\"><figcaption>Roofline: the "
                     f"{html.escape(d.ceiling_label)} (solid) and the datasheet peak (dotted); each kernel at the arithmetic "
                     f"intensity its tiling gives. <a href=\"roofline_{i}.svg\">SVG</a></figcaption></figure>")
        parts.append(device_table(d, sources))
        lines = explain_kernels(d)
        if lines:
            parts.append("<h3>What the numbers say</h3><ul>" + "".join(f"<li>{html.escape(l)}</li>" for l in lines) + "</ul>")
    if gpus or inputs["simulated_runs"]:
        parts.append("<h2>NVIDIA</h2>")
        parts.extend(gpu_section(g) for g in gpus)
        parts.append(simulated_counts_section(inputs["simulated_runs"]))
    for name, caption in (("staircase", "The curriculum staircase: each step at the largest size, against the reference "
                                        "timed beside it (its own row's, never another's)."),
                          ("convergence", "Tuning convergence: the best GFLOP/s found against evaluations, per strategy."),
                          ("heatmap", "GFLOP/s over the two most varied tile parameters of the longest tuning run.")):
        parts.append(f"<figure><img src=\"{name}.png\" alt=\"{name}\"><figcaption>{html.escape(caption)} "
                     f"<a href=\"{name}.svg\">SVG</a></figcaption></figure>")
    ranking = explain_ranking(devices)
    if ranking:
        parts.append("<h3>Across devices</h3><ul>" + "".join(f"<li>{html.escape(l)}</li>" for l in ranking) + "</ul>")
    parts.append(extra)
    # Every measured point of the first chart, with its ceiling and whether it is flagged: the
    # end-to-end test checks that none above its ceiling goes unflagged.
    parts.append("<script type=\"application/json\" id=\"headline-points\">" + json.dumps(points).replace("</", "<\\/")
                 + "</script>")
    # The end-to-end test reads, after the page has loaded, data-plots-loaded (images loaded /
    # images) and data-first-screen (where the first chart and table begin, and the window's height).
    parts.append("<script>window.addEventListener('load',function(){var i=Array.prototype.slice.call(document.images);"
                 "document.body.setAttribute('data-plots-loaded',i.filter(function(x){return x.complete&&x.naturalWidth>0;})"
                 ".length+'/'+i.length);"
                 "var c=document.getElementById('headline-chart'),t=document.getElementById('headline-table');"
                 "document.body.setAttribute('data-first-screen',JSON.stringify({chart_top:c?c.getBoundingClientRect().top:-1,"
                 "chart_height:c?c.getBoundingClientRect().height:0,table_top:t?t.getBoundingClientRect().top:-1,"
                 "window_height:window.innerHeight}));});</script></body></html>")
    with open(os.path.join(out, "index.html"), "w", encoding="utf-8") as f:
        f.write("\n".join(parts))


def explain_ranking(devices):
    sizes = sorted({s for d in devices for s in d.square_sizes()})
    common = [s for s in sizes if sum(1 for d in devices if d.best_at(s)) > 1]
    if len(devices) < 2 or len(common) < 2:
        return []

    def ranking(size):
        ranked = sorted((d for d in devices if d.best_at(size)), key=lambda d: -d.best_at(size)["gflops"])
        return [d.label for d in ranked]
    small, large = common[0], common[-1]
    if ranking(small) == ranking(large):
        return [f"The ranking of devices is the same at {small}³ and {large}³: {' > '.join(ranking(large))}."]
    lines = [f"The ranking changes with size: at {small}³ {' > '.join(ranking(small))}; at {large}³ "
             f"{' > '.join(ranking(large))}."]
    for d in devices:
        b_small, b_large = d.best_at(small), d.best_at(large)
        if b_small and b_large and d.ceiling:
            lines.append(f"{d.label}: {100 * b_small['gflops'] / d.ceiling:.1f}% of its {d.ceiling_label} at {small}³, "
                         f"{100 * b_large['gflops'] / d.ceiling:.1f}% at {large}³: " + small_size_reason(d, b_small, small))
    return lines


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True)
    parser.add_argument("--datasheets", default="")
    parser.add_argument("inputs", nargs="+")
    args = parser.parse_args(argv)
    try:
        inputs = load_inputs(args.inputs)
    except InputError as e:
        print(f"gemmlab report: {e}", file=sys.stderr)
        return 2
    catalogue, sources = load_datasheets(args.datasheets)
    os.makedirs(args.out, exist_ok=True)
    devices = [Device(s, catalogue) for s in inputs["sweeps"]]
    by_gpu = {}
    for r in inputs["gpu_records"]:
        by_gpu.setdefault(r["device"]["name"], []).append(r)
    gpus = [GpuRecords(records, catalogue) for records in by_gpu.values()]
    points = []
    plots = [plot_headline(devices, gpus, unmeasured_devices(catalogue, devices, gpus), args.out, points)]
    for i, d in enumerate(devices):
        if d.square_sizes():
            plots += [plot_device(d, i, args.out), plot_roofline(d, i, args.out)]
    tunes = inputs["tunes"]
    plots += [plot_staircase(devices, args.out), plot_convergence(tunes, args.out), plot_heatmap(tunes, args.out)]
    write_page(args.out, inputs, devices, gpus, plots, sources, catalogue, points,
               "".join(blas_section(doc, args.out) for doc in inputs["blas"]))
    print(os.path.join(args.out, "index.html"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
