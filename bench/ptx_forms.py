#!/usr/bin/env python3
"""The PTX instruction forms the CUDA kernels need across their search spaces, and whether the PTX
simulator decodes every one of them.

Runs `gemmlab verify --backend cuda --compile-only --sample N --json` (N: --sample, 'all' for every
valid configuration), which compiles each kernel x target (sm_80, sm_90a: the simulated devices'
architectures) x precision x configuration with NVRTC and decodes the PTX as the simulator does; a
form the simulator lacks fails that case, naming the form. Prints, per kernel, the configurations
checked and failed and the distinct forms, then the forms over all kernels and those that appear
only away from the default configurations; writes the summary (not every case) with the date,
commit and command to bench/results/ptx-sim/ptx_forms.json.

    bench/ptx_forms.py [--gemmlab build/default/apps/gemmlab/gemmlab] [--sample all] [--kernel K]

With --kernel, the summary goes to bench/results/ptx-sim/ptx_forms-K-sample-N.json instead.
"""
import argparse
import collections
import datetime
import json
import subprocess
import sys

from cpu_report import DEFAULT_CLI, git_commit, save_results


def verify_compile_only(cli, sample, kernel):
    command = [cli, "verify", "--backend", "cuda", "--compile-only", "--sample", sample, "--json"]
    if kernel:
        command += ["--kernel", kernel]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode not in (0, 1):  # 1: some case failed, which the summary reports
        sys.exit(f"{' '.join(command)} failed ({done.returncode}): {done.stderr.strip()}")
    return command, json.loads(done.stdout)


def summarise(document):
    kernels = collections.OrderedDict()
    everywhere = collections.Counter()  # form -> configurations (of any kernel) whose PTX has it
    at_defaults = set()
    for case in document["cases"]:
        k = kernels.setdefault(case["kernel"], {"checked": 0, "failed": 0, "targets": set(), "precisions": set(),
                                                 "forms": set(), "failures": []})
        if case["status"] == "unsupported":
            continue
        k["checked"] += 1
        k["targets"].add(case["target"])
        k["precisions"].add(case["precision"])
        if case["status"] == "failed":
            k["failed"] += 1
            k["failures"].append(f"{case['target']} {case['precision']} {case['params']}: {case['reason']}")
            continue
        forms = case.get("ptx_forms", {})
        k["forms"].update(forms)
        everywhere.update(forms.keys())
        if case["default_config"]:
            at_defaults.update(forms)
    return kernels, everywhere, at_defaults


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gemmlab", default=DEFAULT_CLI, help="path of the gemmlab program")
    parser.add_argument("--sample", default="all", help="configurations per kernel, target and precision, or 'all'")
    parser.add_argument("--kernel", default="", help="only this kernel")
    args = parser.parse_args()

    command, document = verify_compile_only(args.gemmlab, args.sample, args.kernel)
    kernels, everywhere, at_defaults = summarise(document)

    print("| kernel | targets | precisions | configurations checked | failed | distinct forms |")
    print("|---|---|---|---|---|---|")
    for name, k in kernels.items():
        print(f"| {name} | {', '.join(sorted(k['targets']))} | {', '.join(sorted(k['precisions']))} | "
              f"{k['checked']} | {k['failed']} | {len(k['forms'])} |")
    beyond_defaults = sorted(set(everywhere) - at_defaults)
    print(f"\n{len(everywhere)} distinct forms over all kernels; {len(at_defaults)} at the default configurations; "
          f"{len(beyond_defaults)} only elsewhere in the spaces: {', '.join(beyond_defaults) or '-'}")
    failures = [f"{name}: {f}" for name, k in kernels.items() for f in k["failures"]]
    for f in failures[:20]:
        print("failed:", f)

    summary = {
        "command": " ".join(command),
        "script": " ".join(sys.argv),
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "commit": git_commit(),
        "passed": document["passed"],
        "failed": document["failed"],
        "kernels": {name: {"targets": sorted(k["targets"]), "precisions": sorted(k["precisions"]),
                           "configurations_checked": k["checked"], "failed": k["failed"],
                           "forms": sorted(k["forms"]), "failures": k["failures"]}
                    for name, k in kernels.items()},
        "forms": {form: everywhere[form] for form in sorted(everywhere)},
        "forms_only_beyond_defaults": beyond_defaults,
    }
    # One kernel's check goes to a file of its own, so that whole spaces can be checked kernel by
    # kernel without replacing the all-kernel summary.
    name = "ptx_forms.json" if not args.kernel else f"ptx_forms-{args.kernel}-sample-{args.sample}.json"
    print(f"\n(summary: {save_results('ptx-sim/' + name, summary)})")
    return 1 if document["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
