#!/usr/bin/env python3
"""gemmlab report: merges `gemmlab sweep --json` and `gemmlab tune --json` results from one or more
machines (and the simulated systolic presets), and bench/blas_bench.py's results for the BLAS
library, into DIR/index.html, with PNG and SVG plots and explanations computed from the numbers.

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


# --- inputs -------------------------------------------------------------------------------------


def upgrade_sweep(doc):
    """Sweeps of schema 1 (the committed inputs in bench/results/comparison/ and tests/data/report/)
    named two fields of a row differently: `time_s` in seconds is `time_ms` now, and
    `reference_gflops` is `reference.gflops` (the reference's name was only the document's)."""
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


def load_inputs(paths):
    sweeps, tunes, blas = [], [], []
    for path in paths:
        try:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
        except OSError as e:
            raise InputError(f"{path}: cannot be read ({e.strerror})")
        except json.JSONDecodeError as e:
            raise InputError(f"{path}: not JSON ({e})")
        if isinstance(doc, dict) and doc.get("kind") == "sweep":
            if not isinstance(doc.get("results"), list) or "device" not in doc:
                raise InputError(f"{path}: a sweep without results or device")
            upgrade_sweep(doc)
            doc["_file"] = path
            sweeps.append(doc)
        elif isinstance(doc, dict) and "history" in doc and "strategy" in doc:
            doc["_file"] = path
            tunes.append(doc)
        elif isinstance(doc, dict) and doc.get("kind") == "blas-bench":  # bench/blas_bench.py
            if not isinstance(doc.get("results"), list) or not doc["results"]:
                raise InputError(f"{path}: a BLAS benchmark without results")
            doc["_file"] = path
            blas.append(doc)
        else:
            raise InputError(f"{path}: neither `gemmlab sweep --json`, `gemmlab tune --json` nor bench/blas_bench.py output")
    if not sweeps and not tunes and not blas:
        raise InputError("no results given")
    return sweeps, tunes, blas


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


def device_label(sweep):
    d = sweep["device"]
    host = f", {sweep['host']}" if sweep.get("host") else ""
    return f"{d['name']} [{sweep['backend']}{host}]"


def is_square(row):
    return row["m"] == row["n"] == row["k"]


def ok(row):
    return row.get("valid") and row.get("gflops")


PEAK_KEY = {"fp32": "peak_fp32_gflops", "fp16": "peak_fp16_gflops", "bf16": "peak_bf16_gflops",
            "int8": "peak_int8_gops"}


class Device:
    """One sweep: a device on a machine, with its datasheet entry and its ceilings."""

    def __init__(self, sweep, catalogue):
        self.sweep = sweep
        self.info = sweep["device"]
        self.label = device_label(sweep)
        self.rows = [r for r in sweep["results"] if ok(r)]
        self.precision = self.rows[0]["precision"] if self.rows else "fp32"
        self.datasheet = datasheet_for(self.info["name"], catalogue)
        measured = self.info.get("measured") or {}
        # A simulated array's ceilings are at its native precision; elsewhere fp32 and fp64 are measured.
        native = sweep["backend"] == "systolic" or self.precision == "fp32"
        if native:
            self.measured_peak = measured.get("fma_gflops_fp32") or None
            self.spec_peak = self.info.get("peak_gflops_fp32") or None
        elif self.precision == "fp64":
            self.measured_peak = measured.get("fma_gflops_fp64") or None
            self.spec_peak = self.info.get("peak_gflops_fp64") or None
        else:
            self.measured_peak = self.spec_peak = None
        self.measured_bandwidth = measured.get("triad_gb_per_s") or None
        # A CPU datasheet covers a socket: scaled to the cores measured. A TPU datasheet covers a
        # chip: scaled to the one array of it a systolic preset simulates.
        scale = 1.0
        if self.datasheet and self.datasheet.get("kind") == "cpu" and self.datasheet.get("cores"):
            scale = self.info.get("cores", 0) / self.datasheet["cores"]
        arrays = re.search(r"(\d+) per chip", self.info.get("vendor", ""))  # "simulated 128x128 ..., 4 per chip"
        if sweep["backend"] == "systolic" and arrays:
            scale = 1.0 / int(arrays.group(1))
        self.scale = scale
        ds_peak = figure(self.datasheet, PEAK_KEY.get(self.precision, "peak_fp32_gflops"))
        self.datasheet_peak = ds_peak * scale if ds_peak else None
        ds_bw = figure(self.datasheet, "memory_bandwidth_gb_per_s")
        self.datasheet_bandwidth = ds_bw * scale if ds_bw else None
        self.tdp = figure(self.datasheet, "tdp_w")
        self.price = figure(self.datasheet, "launch_price_usd")

    def peak(self):
        """The compute ceiling used for % of peak: the larger of the measured FMA ceiling and the
        backend's own peak (a ceiling measured while the machine was busy comes out low), else the
        datasheet's."""
        known = [p for p in (self.measured_peak, self.spec_peak) if p]
        return max(known) if known else self.datasheet_peak

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

    def reference_at(self, size):
        values = sorted(reference_gflops(r) for r in self.rows
                        if is_square(r) and r["m"] == size and reference_gflops(r))
        return values[len(values) // 2] if values else None

    def best_at(self, size):
        rows = [r for r in self.rows if is_square(r) and r["m"] == size]
        return max(rows, key=lambda r: r["gflops"]) if rows else None


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


def plot_gflops_vs_size(devices, out):
    fig, ax = plt.subplots(figsize=(9, 5.5))
    drawn = False
    for i, d in enumerate(devices):
        color = f"C{i % 10}"
        sizes = d.square_sizes()
        for j, kernel in enumerate(d.kernels()):
            pts = [(s, d.row(kernel, s)["gflops"]) for s in sizes if d.row(kernel, s)]
            if pts:
                marker = "os^vD<>ph*"[j % 10]
                ax.plot(*zip(*pts), marker=marker, color=color, alpha=0.55 + 0.45 * (j + 1) / len(d.kernels()),
                        label=f"{d.label}: {kernel}")
                drawn = True
        ref = [(s, d.reference_at(s)) for s in sizes if d.reference_at(s)]
        if ref:
            ax.plot(*zip(*ref), linestyle="--", color=color, linewidth=2,
                    label=f"{d.label}: {d.sweep['reference']['name']} (vendor)")
    if not drawn:
        plt.close(fig)
        return empty_plot(out, "gflops_vs_size", "GFLOP/s against size", "no square sizes in the sweeps")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("M = N = K")
    ax.set_ylabel("GFLOP/s")
    ax.set_title("GFLOP/s against size (vendor BLAS dashed)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=6, loc="lower right", ncol=2)
    return save(fig, out, "gflops_vs_size")


def plot_blas(rows, path, formats=("png", "svg")):
    """The BLAS library against each peer, per shape: gemmlab's time over the peer's (> 1: gemmlab
    faster), one panel per precision and thread count, timed in alternating blocks in one process."""
    groups = sorted({(r["precision"], r["threads"]) for r in rows})
    fig, axes = plt.subplots(len(groups), 1, figsize=(14, 3.8 * len(groups)), squeeze=False)
    for ax, (precision, threads) in zip(axes[:, 0], groups):
        mine = [r for r in rows if r["precision"] == precision and r["threads"] == threads]
        shapes = list(dict.fromkeys(r["shape"] for r in mine))
        peers = list(dict.fromkeys(r["peer"] for r in mine))
        width = 0.8 / len(peers)
        for j, peer in enumerate(peers):
            ratios = [next((r["gemmlab_gflops"] / r["peer_gflops"] for r in mine if r["shape"] == shape and r["peer"] == peer),
                           0) for shape in shapes]
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
    rows = "".join(
        f"<tr><td>{html.escape(b['precision'])}</td><td>{b['threads']}</td><td>{b['geomean_ratio']:.2f}</td>"
        f"<td>{html.escape(b['worst_shape'])} ({b['worst_ratio']:.2f})</td></tr>" for b in doc.get("bar", []))
    peers = sorted({f"{r['peer']}: {r.get('peer_version', '')}" for r in doc["results"]})
    return (f"<h2>The BLAS library against its peers</h2><p>{html.escape(os.path.basename(doc['_file']))}, measured "
            f"{html.escape(str(doc.get('date', '')))} at {html.escape(str(doc.get('commit', '')))} on "
            f"{html.escape(str((doc.get('device') or {}).get('name', '')))}; peers: "
            f"{html.escape('; '.join(peers))}.</p>"
            f"<figure><img src=\"{name}.png\" alt=\"{name}\"><figcaption>gemmlab's GFLOP/s over each peer's, per shape "
            f"(one process per thread count, alternating blocks on the same buffers). <a href=\"{name}.svg\">SVG</a>"
            f"</figcaption></figure>"
            f"<table><tr><th>precision</th><th>threads</th><th>geometric mean of gemmlab / best peer</th>"
            f"<th>worst shape</th></tr>{rows}</table>")


def plot_roofline(d, index, out):
    fig, ax = plt.subplots(figsize=(7, 5))
    size = max(d.square_sizes()) if d.square_sizes() else None
    points = [(r["kernel"], r["arithmetic_intensity"], r["gflops"]) for r in d.rows
              if size and is_square(r) and r["m"] == size and r.get("arithmetic_intensity")]
    intensities = [p[1] for p in points] or [1.0]
    lo, hi = min(intensities) / 8, max(intensities) * 8
    xs = [lo * (hi / lo) ** (i / 100) for i in range(101)]
    for peak, bw, style, name in ((d.measured_peak, d.measured_bandwidth, "-", "measured"),
                                  (d.datasheet_peak, d.datasheet_bandwidth, ":", "datasheet")):
        if peak and bw:
            ax.plot(xs, [min(peak, bw * x) for x in xs], style, color="k",
                    label=f"{name}: {peak:.0f} GFLOP/s, {bw:.1f} GB/s")
        elif peak:
            ax.axhline(peak, linestyle=style, color="k", label=f"{name} peak {peak:.0f} GFLOP/s")
    for kernel, ai, g in points:
        ax.plot([ai], [g], "o")
        ax.annotate(kernel, (ai, g), fontsize=7, xytext=(3, 3), textcoords="offset points")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity of the tiling (FLOP per byte moved)")
    ax.set_ylabel("GFLOP/s")
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
        values = [d.row(k, size)["gflops"] for k in kernels]
        ref = d.reference_at(size)
        bars = ax.bar(range(len(kernels)), values, color="C0")
        for b, v in zip(bars, values):
            label = f"{100 * v / ref:.0f}% of BLAS" if ref else ""
            ax.annotate(f"{v:.1f}\n{label}", (b.get_x() + b.get_width() / 2, v), ha="center", va="bottom", fontsize=7)
        if ref:
            ax.axhline(ref, linestyle="--", color="C3", label=f"{d.sweep['reference']['name']} {ref:.1f} GFLOP/s")
            ax.legend(fontsize=7, loc="upper left")
        ax.set_xticks(range(len(kernels)))
        ax.set_xticklabels(kernels, rotation=20, fontsize=7)
        ax.set_ylabel("GFLOP/s")
        ax.set_ylim(0, max(values + [ref or 0]) * 1.3)
        ax.set_title(f"{d.label}, {size}³", fontsize=9)
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


def explain_device(d):
    lines = []
    balance = d.peak() / d.bandwidth() if d.peak() and d.bandwidth() else None
    for size in d.square_sizes():
        best = d.best_at(size)
        if not best:
            continue
        text = f"{size}³: best {best['kernel']} at {best['gflops']:.1f} GFLOP/s"
        if d.peak():
            text += f" ({100 * best['gflops'] / d.peak():.0f}% of the {d.peak():.0f} GFLOP/s ceiling)"
        ai = best.get("arithmetic_intensity")
        if ai and balance:
            bound = "memory-bound" if ai < balance else "compute-bound"
            text += (f"; its tiling moves {best['bytes_moved'] / 1e6:.1f} MB, {ai:.1f} FLOP/byte against a machine "
                     f"balance of {balance:.1f} FLOP/byte: {bound}")
        elif not ai:
            text += "; its configuration has no tile parameter, so its traffic is not estimated"
        tiles = best.get("parallel_tiles")
        cores = d.info.get("cores")
        if tiles and cores and tiles < cores and d.sweep["backend"] not in ("cpu", "systolic"):
            text += f"; only {tiles} tiles of C for {cores} compute units: the device is under-used"
        limits = [l for l in best.get("growth_limits", []) if l.get("constraints")]
        if limits:
            kinds = sorted({limit_kind(c) for l in limits for c in l["constraints"]})
            names = ", ".join(f"{l['parameter']}={l['value']}" for l in limits)
            text += f". Tiles ({names}) could not grow further because of {', '.join(kinds)}"
            text += " (" + "; ".join(sorted({constraint_text(c) for l in limits for c in l['constraints']})[:3]) + ")"
        source = best.get("config_source", "")
        text += f" [{'tuned' if source.startswith('tuned') else 'default'} configuration]."
        lines.append(text)
    return lines


def small_size_reason(d, row, size):
    """Why a device does worse on a small problem, in terms of what it has."""
    backend = d.sweep["backend"]
    if backend == "systolic":
        return ("at a small size the array's fill and drain and the loads of each tile's operands are a "
                "larger share of the time")
    if backend == "cpu":
        return "at a small size packing, thread start-up and the edges of the tiles are a larger share of the time"
    tiles, cores = row.get("parallel_tiles"), d.info.get("cores")
    if tiles and cores and tiles < 2 * cores:
        return f"{tiles} tiles of C at {size}³ for {cores} compute units leave the device under-used"
    return "a small problem leaves a large device under-used"


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
        if b_small and b_large and d.peak():
            lines.append(f"{d.label}: {100 * b_small['gflops'] / d.peak():.1f}% of its ceiling at {small}³, "
                         f"{100 * b_large['gflops'] / d.peak():.1f}% at {large}³"
                         + ": " + small_size_reason(d, b_small, small))
    return lines


# --- the page -----------------------------------------------------------------------------------


def fmt(value, digits=1, suffix=""):
    return "—" if value is None else f"{value:,.{digits}f}{suffix}"


def table(devices, sources):
    head = ("<tr><th>device</th><th>kernel</th><th>size</th><th>GFLOP/s</th><th>% of measured ceiling</th>"
            "<th>% of datasheet peak</th><th>% of vendor BLAS</th><th>GFLOP/s per W (measured)</th>"
            "<th>GFLOP/s per W (datasheet TDP)</th><th>GFLOP/s per $ (launch price)</th>"
            "<th>datasheet: peak, bandwidth, TDP, price</th></tr>")
    rows = []
    for d in devices:
        if not d.square_sizes():
            continue
        size = max(d.square_sizes())
        ref = d.reference_at(size)
        ds = d.datasheet
        if ds:
            cited = sorted({f["source"] for f in ds.get("figures", {}).values()})
            links = ", ".join(f"<a href=\"{html.escape(sources.get(s, {}).get('url', '#'))}\">{html.escape(s)}</a>"
                              for s in cited)
            scale = ""
            if d.scale != 1:
                scale = (f" (× {d.scale:.3f}: {d.info.get('cores')} of {ds.get('cores')} cores)" if ds.get("kind") == "cpu"
                         else f" (× {d.scale:.3f}: one simulated array of the chip)")
            sheet = (f"{html.escape(ds['name'])}{scale}: {fmt(d.datasheet_peak, 0)} GFLOP/s, "
                     f"{fmt(d.datasheet_bandwidth, 1)} GB/s, {fmt(d.tdp, 0)} W, ${fmt(d.price, 0)}; {links}")
        else:
            sheet = "not in the catalogue"
        for kernel in d.kernels() + ["(vendor BLAS)"]:
            r = d.row(kernel, size) if kernel != "(vendor BLAS)" else None
            g = r["gflops"] if r else (ref if kernel == "(vendor BLAS)" else None)
            if g is None:
                continue
            power = (r or {}).get("power") or {}
            watts = (power.get("kernel") or {}).get("watts") if power else None
            per_w = f"{g / watts:.2f}" if watts else "not measured"
            rows.append(
                f"<tr><td>{html.escape(d.label)}</td><td>{html.escape(kernel)}</td><td>{size}³</td><td>{g:.1f}</td>"
                f"<td>{fmt(100 * g / d.peak() if d.peak() else None, 1, '%')}</td>"
                f"<td>{fmt(100 * g / d.datasheet_peak if d.datasheet_peak else None, 1, '%')}</td>"
                f"<td>{fmt(100 * g / ref if ref else None, 1, '%')}</td><td>{per_w}</td>"
                f"<td>{fmt(g / (d.tdp * d.scale) if d.tdp else None, 3)}</td>"
                f"<td>{fmt(g / (d.price * d.scale) if d.price else None, 4)}</td><td>{sheet}</td></tr>")
    return f"<table>{head}{''.join(rows)}</table>"


def write_page(out, devices, tunes, plots, sources, extra=""):
    parts = ["<!doctype html><html><head><meta charset=\"utf-8\"><title>gemmlab report</title><style>"
             "body{font-family:sans-serif;max-width:1200px;margin:auto}table{border-collapse:collapse;font-size:12px}"
             "td,th{border:1px solid #ccc;padding:3px 6px}img{max-width:100%}</style></head><body>",
             "<h1>gemmlab: GEMM on each device, against its vendor library and its peak</h1>",
             "<p>Inputs: " + ", ".join(html.escape(os.path.basename(s["_file"])) for s in [d.sweep for d in devices])
             + (", " + ", ".join(html.escape(os.path.basename(t["_file"])) for t in tunes) if tunes else "") + "</p>"]
    parts.append("<h2>Devices</h2><ul>")
    for d in devices:
        s = d.sweep
        power = s.get("power_source", "not measured")
        parts.append(f"<li><b>{html.escape(d.label)}</b>: measured {html.escape(s.get('date', ''))} by "
                     f"<code>{html.escape(s.get('command', ''))}</code>; reference {html.escape(s['reference']['name'])} "
                     f"{html.escape(s['reference'].get('version', ''))}; ceilings: FMA {fmt(d.measured_peak, 1)} GFLOP/s, "
                     f"triad {fmt(d.measured_bandwidth, 1)} GB/s; power: {html.escape(power)}</li>")
    parts.append("</ul>")
    captions = {
        "gflops_vs_size": "GFLOP/s against size, a line per device and kernel; the vendor BLAS dashed.",
        "staircase": "The curriculum staircase: each step's GFLOP/s at the largest size, and its share of the vendor BLAS.",
        "convergence": "Tuning convergence: the best GFLOP/s found against evaluations, per strategy.",
        "heatmap": "GFLOP/s over the two most varied tile parameters of the longest tuning run.",
    }
    for name in plots:
        caption = captions.get(name, "Roofline: the measured (solid) and datasheet (dotted) ceilings; each kernel at "
                                     "the arithmetic intensity its tiling gives.")
        parts.append(f"<figure><img src=\"{name}.png\" alt=\"{name}\"><figcaption>{html.escape(caption)} "
                     f"<a href=\"{name}.svg\">SVG</a></figcaption></figure>")
    parts.append("<h2>Measured beside the datasheet</h2>")
    parts.append(table(devices, sources))
    parts.append("<h2>What the numbers say</h2>")
    for d in devices:
        lines = explain_device(d)
        if lines:
            parts.append(f"<h3>{html.escape(d.label)}</h3><ul>" + "".join(f"<li>{html.escape(l)}</li>" for l in lines) + "</ul>")
    ranking = explain_ranking(devices)
    if ranking:
        parts.append("<h3>Across devices</h3><ul>" + "".join(f"<li>{html.escape(l)}</li>" for l in ranking) + "</ul>")
    parts.append(extra)
    # The end-to-end test reads data-plots-loaded after the page has loaded.
    parts.append("<script>window.addEventListener('load',function(){var i=Array.prototype.slice.call(document.images);"
                 "document.body.setAttribute('data-plots-loaded',i.filter(function(x){return x.complete&&x.naturalWidth>0;})"
                 ".length+'/'+i.length);});</script></body></html>")
    with open(os.path.join(out, "index.html"), "w", encoding="utf-8") as f:
        f.write("\n".join(parts))


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True)
    parser.add_argument("--datasheets", default="")
    parser.add_argument("inputs", nargs="+")
    args = parser.parse_args(argv)
    try:
        sweeps, tunes, blas = load_inputs(args.inputs)
    except InputError as e:
        print(f"gemmlab report: {e}", file=sys.stderr)
        return 2
    catalogue, sources = load_datasheets(args.datasheets)
    os.makedirs(args.out, exist_ok=True)
    devices = [Device(s, catalogue) for s in sweeps]
    plots = [plot_gflops_vs_size(devices, args.out)]
    plots += [plot_roofline(d, i, args.out) for i, d in enumerate(devices)]
    plots += [plot_staircase(devices, args.out), plot_convergence(tunes, args.out), plot_heatmap(tunes, args.out)]
    write_page(args.out, devices, tunes, plots, sources, "".join(blas_section(doc, args.out) for doc in blas))
    print(os.path.join(args.out, "index.html"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
