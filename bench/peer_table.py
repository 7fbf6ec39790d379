"""The result table the peer benchmarks print: medians of interleaved runs per tool, then
horde's ratio to each peer. A run is (rate, requests, CPU seconds, peak RSS in KiB)."""

import statistics


def medians(runs):
    """(rate, CPU ms per 1,000 requests, peak RSS in MiB), each the median over `runs`."""
    return (statistics.median(r[0] for r in runs), statistics.median(r[2] * 1e6 / r[1] for r in runs),
            statistics.median(r[3] / 1024 for r in runs))


def print_table(runs_by_tool, peers, unit="req/s"):
    """A Markdown table of every tool's medians and horde's ratios to `peers` (when horde ran)."""
    figures = {tool: medians(runs) for tool, runs in runs_by_tool.items()}
    print(f"| tool | {unit} | CPU ms per 1,000 | peak RSS (MiB) |")
    print("|---|---|---|---|")
    for tool, (rate, cpu, rss) in figures.items():
        print(f"| {tool} | {rate:,.0f} | {cpu:.2f} | {rss:.1f} |")
    horde = figures.get("horde")
    for peer in peers if horde else ():
        p = figures[peer]
        print(f"| horde / {peer} | {horde[0] / p[0]:.2f} | {horde[1] / p[1]:.2f} | {horde[2] / p[2]:.2f} |")
    print()
