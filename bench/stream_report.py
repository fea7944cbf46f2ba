#!/usr/bin/env python3
"""What bench/rag-stream-demo.sh reports about a streamed run, as one JSON object on stdout.

    stream_report.py join CLIENT.jsonl UPSTREAM_REQUESTS.json
        joins the client's per-request timings (`turnstile load --chat`'s requests.jsonl, or
        bench/locust/chat_stream.py's --chat-timings file: `tag`, `first_delta`, ... in Unix
        seconds) with the upstream's (`GET /stats/requests` of tests/upstream/upstream.py:
        `tag`, `arrived`, `first_token`, `done`) by tag, and reports, over the streams both
        saw a first token of: the delay from the upstream writing its first token to the client
        receiving the first content delta (p50/p95/p99/max, and the share within 50 ms), and
        the gate's part before it: from the client sending to the upstream's `arrived`.

    stream_report.py cdf-svg OUT.svg LABEL CLIENT.jsonl UPSTREAM_REQUESTS.json [LABEL ...]
        draws each run's delays (as `join` computes them) as a cumulative distribution.

    stream_report.py locust CSV_PREFIX
        Locust's --csv files of a run of bench/locust/chat_stream.py: the plateau (the peers'
        and `turnstile load`'s definition: from the first second with every user running plus
        2 x the median total, to the last row; requests of the chat row by its Total Request
        Count), and the percentiles of both rows (`/v1/chat/completions`: the whole stream;
        `ttft`: the first content delta).

Both machines' clocks are one: the client, turnstile and the upstream run on the same host, and
both sides stamp with the wall clock (time.time(), SystemTime).
"""

import csv
import json
import math
import sys


def quantile(sorted_values, q):
    """The value at quantile q (nearest rank), or None for no values."""
    if not sorted_values:
        return None
    rank = max(1, min(len(sorted_values), math.ceil(q * len(sorted_values))))
    return sorted_values[rank - 1]


def percentiles(values):
    values = sorted(values)
    return {
        "n": len(values),
        "p50": quantile(values, 0.50),
        "p95": quantile(values, 0.95),
        "p99": quantile(values, 0.99),
        "max": values[-1] if values else None,
    }


def rounded(d, digits=1):
    return {k: (round(v, digits) if isinstance(v, float) else v) for k, v in d.items()}


def join(client_path, upstream_path):
    client = {}
    with open(client_path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                record = json.loads(line)
                client[record["tag"]] = record
    with open(upstream_path, encoding="utf-8") as fh:
        upstream = {r["tag"]: r for r in json.load(fh)["requests"]}
    both = [(client[t], upstream[t]) for t in client if t in upstream]
    delays = [
        (c["first_delta"] - u["first_token"]) * 1000
        for c, u in both
        if c.get("first_delta") is not None and u.get("first_token") is not None
    ]
    before = [
        (u["arrived"] - c["sent"]) * 1000 for c, u in both if u.get("arrived") is not None
    ]
    within = sum(1 for d in delays if d <= 50.0)
    return {
        "client_requests": len(client),
        "upstream_requests": len(upstream),
        "joined": len(both),
        "first_token_to_client_ms": rounded(percentiles(delays), 2),
        "within_50_ms": within,
        "within_50_ms_share": round(within / len(delays), 4) if delays else None,
        "sent_to_upstream_arrival_ms": rounded(percentiles(before), 1),
    }


def number(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def locust(prefix):
    with open(prefix + "_stats.csv", newline="", encoding="utf-8") as fh:
        stats = {r["Name"]: r for r in csv.DictReader(fh)}
    with open(prefix + "_stats_history.csv", newline="", encoding="utf-8") as fh:
        history = [r for r in csv.DictReader(fh) if r["Name"] == "/v1/chat/completions"]
    out = {}
    for name, key in (("/v1/chat/completions", "total_ms"), ("ttft", "ttft_ms")):
        row = stats.get(name)
        if row is None:
            continue
        out[key] = {
            "requests": int(row["Request Count"]),
            "failures": int(row["Failure Count"]),
            "p50": number(row["50%"]),
            "p95": number(row["95%"]),
            "p99": number(row["99%"]),
            "max": number(row["Max Response Time"]),
            "mean": round(number(row["Average Response Time"]) or 0.0, 1),
        }
    if history:
        users = max(int(r["User Count"]) for r in history)
        first = min(int(r["Timestamp"]) for r in history if int(r["User Count"]) == users)
        median_s = (out.get("total_ms", {}).get("p50") or 0) / 1000
        start = first + 2 * median_s
        rows = [r for r in history if int(r["Timestamp"]) >= start and int(r["User Count"]) == users]
        if len(rows) >= 2:
            span = int(rows[-1]["Timestamp"]) - int(rows[0]["Timestamp"])
            done = int(rows[-1]["Total Request Count"]) - int(rows[0]["Total Request Count"])
            out["plateau"] = {
                "all_running_at_s": first - int(history[0]["Timestamp"]),
                "start_s": int(rows[0]["Timestamp"]) - int(history[0]["Timestamp"]),
                "end_s": int(rows[-1]["Timestamp"]) - int(history[0]["Timestamp"]),
                "requests": done,
                "requests_per_s": round(done / span, 2) if span else None,
            }
    return out


def delays(client_path, upstream_path):
    """The first-token-to-client delays (ms) of a run, sorted."""
    with open(client_path, encoding="utf-8") as fh:
        client = {r["tag"]: r for r in map(json.loads, filter(str.strip, fh))}
    with open(upstream_path, encoding="utf-8") as fh:
        upstream = {r["tag"]: r for r in json.load(fh)["requests"]}
    return sorted(
        (client[t]["first_delta"] - u["first_token"]) * 1000
        for t, u in upstream.items()
        if t in client and client[t].get("first_delta") is not None and u.get("first_token") is not None
    )


def cdf_svg(out, runs):
    """An SVG of each run's delays as a cumulative distribution (x: ms, log scale 0.1–100)."""
    colors = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"]
    width, height, left, right, top, bottom = 1000, 520, 70, 30, 50, 60
    plot_w, plot_h = width - left - right, height - top - bottom
    lo, hi = math.log10(0.1), math.log10(100.0)

    def x(ms):
        return left + plot_w * (math.log10(min(max(ms, 0.1), 100.0)) - lo) / (hi - lo)

    def y(share):
        return top + plot_h * (1 - share)

    parts = [
        f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg">',
        f'<rect x="0" y="0" width="{width}" height="{height}" fill="#FFFFFF"/>',
        f'<text x="16" y="28" font-family="sans-serif" font-size="16">From the upstream writing its first '
        f"token to the client reading the first content delta (each stream, cumulative)</text>",
    ]
    for ms in (0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100):
        parts.append(f'<line x1="{x(ms):.1f}" y1="{top}" x2="{x(ms):.1f}" y2="{top + plot_h}" stroke="#E0E0E0"/>')
        parts.append(f'<text x="{x(ms):.1f}" y="{top + plot_h + 18}" font-family="sans-serif" font-size="12" '
                     f'text-anchor="middle">{ms:g}</text>')
    for share in (0, 0.25, 0.5, 0.75, 0.95, 1):
        parts.append(f'<line x1="{left}" y1="{y(share):.1f}" x2="{left + plot_w}" y2="{y(share):.1f}" stroke="#E0E0E0"/>')
        parts.append(f'<text x="{left - 8}" y="{y(share) + 4:.1f}" font-family="sans-serif" font-size="12" '
                     f'text-anchor="end">{share * 100:g} %</text>')
    parts.append(f'<line x1="{x(50):.1f}" y1="{top}" x2="{x(50):.1f}" y2="{top + plot_h}" stroke="#d62728" '
                 f'stroke-dasharray="4 3"/>')
    parts.append(f'<text x="{x(50) + 4:.1f}" y="{top + 14}" font-family="sans-serif" font-size="12" '
                 f'fill="#d62728">goal: 50 ms</text>')
    parts.append(f'<text x="{left + plot_w / 2:.1f}" y="{height - 16}" font-family="sans-serif" font-size="13" '
                 f'text-anchor="middle">ms (log scale)</text>')
    for i, (label, values) in enumerate(runs):
        color = colors[i % len(colors)]
        n = len(values)
        points = " ".join(f"{x(v):.1f},{y((k + 1) / n):.1f}" for k, v in enumerate(values))
        parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" points="{points}"/>')
        # The legend, in the empty middle right of the plot.
        lx, ly = x(1.2), y(0.6) + 20 * i
        parts.append(f'<line x1="{lx:.1f}" y1="{ly:.1f}" x2="{lx + 24:.1f}" y2="{ly:.1f}" stroke="{color}" stroke-width="3"/>')
        parts.append(f'<text x="{lx + 30:.1f}" y="{ly + 4:.1f}" font-family="sans-serif" font-size="13">{label} '
                     f'(n {n}, p95 {quantile(values, 0.95):.2f} ms)</text>')
    parts.append("</svg>")
    with open(out, "w", encoding="utf-8") as fh:
        fh.write("\n".join(parts) + "\n")


def main():
    if len(sys.argv) >= 5 and sys.argv[1] == "cdf-svg" and len(sys.argv) % 3 == 0:
        # cdf-svg OUT.svg (LABEL CLIENT.jsonl UPSTREAM.json)...
        args = sys.argv[3:]
        runs = [(args[i], delays(args[i + 1], args[i + 2])) for i in range(0, len(args), 3)]
        cdf_svg(sys.argv[2], runs)
    elif len(sys.argv) == 4 and sys.argv[1] == "join":
        print(json.dumps(join(sys.argv[2], sys.argv[3])))
    elif len(sys.argv) == 3 and sys.argv[1] == "locust":
        print(json.dumps(locust(sys.argv[2])))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
