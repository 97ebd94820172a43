"""What a second worker buys: TPC-H's 22 queries on an SQE cluster of separate processes
(`sqe coordinator`, `sqe worker`) whose workers are pinned to disjoint CPUs, first one worker on
one core, then two workers on one core each, every answer checked against DuckDB's as
`tpch.py` checks it.

On a machine of C cores, the one-worker cluster pins its worker to the last core and the
coordinator to the others; the two-worker cluster pins its workers to the last two cores and
leaves the coordinator unpinned (on two cores it shares them with the workers: what it does for
a query, such as a final sort or aggregation, competes with them). After each layout the CPU
seconds each process spent are printed: the coordinator's is work that did not run on workers.
Before the coordinator handed its own stage's work to a worker, with one worker that was all
of it (benches/README.md, 2026-12-08). `--target-partitions` fixes
the partitions per task the coordinator plans (by default its own cores; a distributed plan
takes at least two).

    cargo build --release --bin sqe
    .venv/bin/python benches/scale_out.py --sqe target/release/sqe --scale-factor 10 --runs 2

The data is generated once with `sqe local` into `--data-dir` (kept, so a second run reuses
it) and the clusters read it through the same embedded catalog.
"""

import argparse
import math
import os
import socket
import subprocess
import sys
import time
import urllib.request

import tpch


def cores():
    return sorted(os.sched_getaffinity(0))


def wait_for_port(port, process, what, timeout=120):
    deadline = time.time() + timeout
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            if process.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"{what} did not start")
            time.sleep(0.2)


def wait_for_info(port, process, timeout=300):
    deadline = time.time() + timeout
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/info", timeout=1)
            return
        except OSError:
            if process.poll() is not None or time.time() > deadline:
                raise RuntimeError("the coordinator did not start")
            time.sleep(0.3)


def generate(binary, data_dir, scale_factor, parts):
    """TPC-H at `scale_factor` in `data_dir` (catalog.db, warehouse/), unless it is there."""
    marker = os.path.join(data_dir, f"tpch-sf{scale_factor}")
    if os.path.exists(marker):
        return
    os.makedirs(data_dir, exist_ok=True)
    print(f"generating TPC-H SF {scale_factor} with `sqe local` into {data_dir} ...", flush=True)
    started = time.time()
    process, _, _ = tpch.start_local(binary, scale_factor, data_dir, parts=parts)
    process.terminate()
    process.wait(timeout=120)
    open(marker, "w").close()
    print(f"generated in {time.time() - started:.1f} s", flush=True)


def pinned(cpus, command, log):
    return subprocess.Popen(
        ["taskset", "-c", ",".join(map(str, cpus)), *command], stdout=log, stderr=log,
    )


def cpu_seconds(process):
    """User and system CPU seconds `process` has spent so far (Linux)."""
    with open(f"/proc/{process.pid}/stat") as f:
        # Fields after the command name, which is in parentheses and may hold spaces.
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_cluster(binary, data_dir, worker_cpus, coordinator_cpus, run_dir, worker_memory, partitions):
    """A coordinator and one worker per entry of `worker_cpus`, each a process pinned to its
    CPUs; their processes and the coordinator's Trino address."""
    os.makedirs(run_dir, exist_ok=True)
    log = open(os.path.join(run_dir, "cluster.log"), "a")
    processes = []
    try:
        return start_processes(
            binary, data_dir, worker_cpus, coordinator_cpus, run_dir, worker_memory, partitions, log, processes,
        )
    except Exception:
        stop(processes)  # what did start does not outlive the failure
        raise


def start_processes(binary, data_dir, worker_cpus, coordinator_cpus, run_dir, worker_memory, partitions, log, processes):
    ports = [tpch.free_port() for _ in worker_cpus]
    for i, (cpu, port) in enumerate(zip(worker_cpus, ports)):
        config = os.path.join(run_dir, f"worker-{i}.toml")
        with open(config, "w") as f:
            f.write(
                f'[worker]\nnode_id = "worker-{i}"\nbind_address = "127.0.0.1"\n'
                f"flight_port = {port}\nallow_unauthenticated_workers = true\n"
                f'memory_limit = "{worker_memory}"\n'
            )
        processes.append(pinned([cpu], [binary, "worker", "--config", config], log))
        wait_for_port(port, processes[-1], f"worker {i}")
    flight, trino_port = tpch.free_port(), tpch.free_port()
    config = os.path.join(run_dir, "coordinator.toml")
    urls = ", ".join(f'"http://127.0.0.1:{p}"' for p in ports)
    with open(config, "w") as f:
        f.write(
            f'[coordinator]\nnode_id = "coordinator"\nbind_address = "127.0.0.1"\n'
            f"worker_urls = [{urls}]\nallow_unauthenticated_workers = true\n"
            f"flight_sql_port = {flight}\ntrino_http_port = {trino_port}\n"
            f"target_partitions = {partitions}\n\n"
            f'[catalog]\ntype = "sql"\nname = "iceberg"\n'
            f'uri = "{os.path.join(data_dir, "catalog.db")}"\n'
            f'warehouse = "{os.path.join(data_dir, "warehouse")}"\n'
        )
    processes.append(pinned(coordinator_cpus, [binary, "coordinator", "--config", config], log))
    wait_for_info(trino_port, processes[-1])
    return processes, f"127.0.0.1:{trino_port}"


def stop(processes):
    for p in processes:
        p.terminate()
    for p in processes:
        p.wait(timeout=60)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sqe", required=True, help="the sqe binary")
    parser.add_argument("--scale-factor", type=float, default=1.0)
    parser.add_argument("--parts", type=int, default=8, help="data files per large table")
    parser.add_argument("--data-dir", default="sqe-scale-out", help="where the generated data is kept")
    parser.add_argument("--runs", type=int, default=2, help="timed runs per query after a warm-up (best kept)")
    parser.add_argument("--worker-memory", default="8GB", help="each worker's memory_limit, the same in both layouts")
    parser.add_argument(
        "--target-partitions", type=int, default=0,
        help="partitions per task the coordinator plans in both layouts (0: the coordinator's own cores)",
    )
    args = parser.parse_args()

    cpus = cores()
    if len(cpus) < 2:
        sys.exit("needs at least two CPUs")
    data_dir = os.path.abspath(args.data_dir)
    generate(args.sqe, data_dir, args.scale_factor, args.parts)
    warehouse = os.path.join(data_dir, "warehouse")
    layouts = [
        ("1 worker", cpus[-1:], cpus[:-1]),
        ("2 workers", cpus[-2:], cpus),
    ]
    best = {}
    failed = set()
    for name, worker_cpus, coordinator_cpus in layouts:
        print(f"\n{name}: workers on CPUs {worker_cpus}, coordinator on {coordinator_cpus}", flush=True)
        processes, address = start_cluster(
            args.sqe, data_dir, worker_cpus, coordinator_cpus, os.path.join(data_dir, name.replace(" ", "-")),
            args.worker_memory, args.target_partitions,
        )
        try:
            failures, times = tpch.report(
                address, warehouse, args.runs, coordinator=False,
                out=lambda line: print(line, flush=True),
            )
            *workers, coordinator = processes
            spent = ", ".join(f"worker {i} {cpu_seconds(w):.1f} s" for i, w in enumerate(workers))
            print(f"CPU time spent in the layout: coordinator {cpu_seconds(coordinator):.1f} s, {spent}", flush=True)
        finally:
            stop(processes)
        failed.update(failures)
        best[name] = times["SQE distributed"]
    if args.runs == 0:
        print("--runs 0: answers checked, nothing timed")
        sys.exit(1 if failed else 0)
    one, two = best["1 worker"], best["2 workers"]
    # Totals over the queries both layouts answered.
    both = [n for n in one if not math.isnan(one[n]) and not math.isnan(two.get(n, math.nan))]
    print(f"\n## Scale-out, TPC-H SF {args.scale_factor}, best of {args.runs}\n")
    print("| query | 1 worker s | 2 workers s | speed-up |")
    print("|---|---:|---:|---:|")
    for number in sorted(one):
        a, b = one[number], two.get(number, math.nan)
        print(f"| Q{number} | {a:.3f} | {b:.3f} | {a / b if b else math.nan:.2f} |")
    total_one = sum(one[n] for n in both)
    total_two = sum(two[n] for n in both)
    print(f"| total | **{total_one:.3f}** | **{total_two:.3f}** | **{total_one / total_two:.2f}** |")
    if failed:
        print(f"queries that failed or differ from DuckDB: {', '.join(sorted(failed))}")
        sys.exit(1)


if __name__ == "__main__":
    main()
