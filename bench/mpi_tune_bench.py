#!/usr/bin/env python3
"""Tuning on MPI ranks: evaluations per second against the number of ranks, and rank 0's own cost
per evaluation, on the systolic backend (its evaluations run anywhere and take milliseconds, so
rank 0's share of the work shows).

    bench/mpi_tune_bench.py [--gemmlab PATH] [--mpirun PATH] [--ranks 1,2] [--budget N] [--repeats R]

Each rank count runs `gemmlab tune --backend systolic --kernel 02_buffer_tiled` (1024^3, the default
strategy, a fresh results cache each time) R times, the rank counts in turn; one rank is a plain
process, more run under mpirun. Reported per rank count, as medians over the repeats: evaluations per second, and rank 0's
proposal time (the strategy and cache lookups), commit time (one SQLite transaction per result)
and wait time per evaluation (`gemmlab tune --json`: rank0). From those: rank 0 serves at most
1 / (proposal + commit) evaluations per second, so it saturates at about that many divided by one
rank's evaluation rate. Written to bench/results/mpi-tune.json.
"""
import argparse
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

from cpu_report import DEFAULT_CLI, ROOT, git_commit, save_results

KERNEL = ["--backend", "systolic", "--kernel", "02_buffer_tiled", "--m", "1024", "--n", "1024", "--k", "1024"]


def tune(args, ranks, cache):
    command = [args.gemmlab, "tune", *KERNEL, "--budget", str(args.budget), "--cache", cache, "--json"]
    if ranks > 1:
        command = [args.mpirun, "--oversubscribe", "-np", str(ranks)] + command
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    return command, json.loads(done.stdout)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gemmlab", default=DEFAULT_CLI)
    parser.add_argument("--mpirun", default=shutil.which("mpirun") or "mpirun")
    parser.add_argument("--ranks", default="1,2")
    parser.add_argument("--budget", type=int, default=150)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    commit = git_commit()

    counts = [int(r) for r in args.ranks.split(",")]
    runs = {ranks: [] for ranks in counts}
    commands = {}
    for _ in range(args.repeats):  # the rank counts take turns: the machine's drift touches each alike
        for ranks in counts:
            with tempfile.TemporaryDirectory() as tmp:
                command, result = tune(args, ranks, os.path.join(tmp, "results.sqlite"))
            if result.get("ranks", 1) != ranks or len(result["history"]) != args.budget:
                sys.exit(f"{ranks} ranks: the run reports {result.get('ranks')} ranks, {len(result['history'])} results")
            n = len(result["history"])
            commands[ranks] = " ".join(command)
            runs[ranks].append({"evaluations_per_second": result["evaluations_per_second"], "seconds": result["seconds"],
                                "proposal_ms_per_evaluation": 1e3 * result["rank0"]["proposal_seconds"] / n,
                                "commit_ms_per_evaluation": 1e3 * result["rank0"]["commit_seconds"] / n,
                                "wait_ms_per_evaluation": 1e3 * result["rank0"]["wait_seconds"] / n})
    rows = []
    for ranks in counts:
        row = {"ranks": ranks, "runs": runs[ranks]}
        for key in runs[ranks][0]:
            row[key] = statistics.median(r[key] for r in runs[ranks])
        rows.append(row)
        print(f"{ranks} rank(s): {row['evaluations_per_second']:.1f} evaluations/s; rank 0 per evaluation: "
              f"proposal {row['proposal_ms_per_evaluation']:.2f} ms, commit {row['commit_ms_per_evaluation']:.2f} ms, "
              f"waiting {row['wait_ms_per_evaluation']:.2f} ms")
    commands = [commands[ranks] for ranks in counts]

    one = rows[0]
    # The largest of the rank counts' costs: with several ranks on few cores, rank 0's own work
    # shares a core with an evaluation and takes longer than alone.
    rank0_ms = max(r["proposal_ms_per_evaluation"] + r["commit_ms_per_evaluation"] for r in rows)
    per_rank_rate = one["evaluations_per_second"]
    capacity = 1e3 / rank0_ms
    saturation = {"rank0_ms_per_evaluation": rank0_ms, "rank0_evaluations_per_second_at_most": capacity,
                  "one_rank_evaluations_per_second": per_rank_rate,
                  "ranks_at_saturation": capacity / per_rank_rate}
    print(f"rank 0 needs {rank0_ms:.2f} ms per evaluation: at most {capacity:.0f} evaluations/s, "
          f"about {saturation['ranks_at_saturation']:.0f} ranks evaluating at {per_rank_rate:.1f}/s each")
    devices = json.loads(subprocess.run([args.gemmlab, "devices", "--json"], capture_output=True, text=True,
                                        check=True).stdout)["devices"]
    cpu = next(d for d in devices if d["backend"] == "cpu")
    document = {"kind": "mpi-tune", "script": "bench/mpi_tune_bench.py", "commands": commands,
                "date": datetime.datetime.now().isoformat(timespec="seconds"), "commit": commit,
                "host": {"name": cpu["name"], "cores": cpu["cores"]}, "budget": args.budget,
                "repeats": args.repeats, "results": rows, "saturation": saturation}
    print(f"(written to {save_results('mpi-tune.json', document)})")


if __name__ == "__main__":
    main()
