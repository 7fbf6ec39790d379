"""`horde bench cmd` against hyperfine on the same commands, in the same run: do they measure the
same time? hyperfine subtracts the shell's start-up from its mean; horde includes it in its
Score and reports it (`config.command_floor_ms`), so horde's Score minus its floor is set beside
hyperfine's mean. A sleep (the time is known) and a CPU-bound gzip. Repetitions alternate which
tool goes first; medians and ratios are printed as a Markdown table.

    python3 bench/bench_cmd_vs_hyperfine.py --repetitions 3
"""

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path


def run(argv):
    completed = subprocess.run(argv, capture_output=True, text=True)
    if completed.returncode != 0:
        sys.exit(f"{' '.join(map(str, argv))} failed ({completed.returncode}): {completed.stderr[-2000:]}")
    return completed


def horde_ms(command, work, trials):
    out = Path(tempfile.mkstemp(suffix=".json", dir=work)[1])
    run(["horde", "bench", "cmd", "--name", "cmd", "--trials", str(trials), "--out", str(out), "--", command])
    result = json.loads(out.read_text())
    return result["cells"][0]["stats"]["score"], result["config"]["command_floor_ms"]


def hyperfine_ms(command, work, runs):
    out = Path(tempfile.mkstemp(suffix=".json", dir=work)[1])
    run(["hyperfine", "--style", "none", "--warmup", "2", "--runs", str(runs), "--export-json", str(out), command])
    return json.loads(out.read_text())["results"][0]["mean"] * 1000


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--trials", type=int, default=5, help="horde's trials per repetition")
    parser.add_argument("--runs", type=int, default=20, help="hyperfine's runs per repetition")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="horde-bench-vs-hyperfine-"))
    data = work / "data.txt"
    words = [f"word{i}" for i in range(5000)]
    generator = random.Random(3)
    data.write_text(" ".join(generator.choice(words) for _ in range(1_500_000)))
    commands = {"sleep 0.05": "sleep 0.05", "gzip -6 (8 MB of text)": f"gzip -6 -c {data} > /dev/null"}
    rows = []
    for label, command in commands.items():
        horde, floors, hyperfine = [], [], []
        for repetition in range(args.repetitions):
            order = ["horde", "hyperfine"] if repetition % 2 == 0 else ["hyperfine", "horde"]
            for tool in order:
                if tool == "horde":
                    score, floor = horde_ms(command, work, args.trials)
                    horde.append(score)
                    floors.append(floor)
                else:
                    hyperfine.append(hyperfine_ms(command, work, args.runs))
            print(f"{label} #{repetition + 1}: horde {horde[-1]:.2f} ms (floor {floors[-1]:.2f}), "
                  f"hyperfine {hyperfine[-1]:.2f} ms", file=sys.stderr)
        h, f, p = statistics.median(horde), statistics.median(floors), statistics.median(hyperfine)
        rows.append((label, h, f, p))
    print(f"\nmedians of {args.repetitions} alternating repetitions\n")
    print("| command | horde Score (ms) | its floor (sh -c true) | Score - floor | hyperfine mean (shell subtracted) | ratio |")
    print("|---|---|---|---|---|---|")
    for label, h, f, p in rows:
        print(f"| {label} | {h:.2f} | {f:.2f} | {h - f:.2f} | {p:.2f} | {(h - f) / p:.3f} |")


if __name__ == "__main__":
    main()
