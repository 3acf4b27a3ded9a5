"""Parse N completions per parser (a third each: no call, one call, three parallel calls, written with the
parser's own `format`) and print the time per parser. Target: under 1 s per 10,000 completions.

    .venv/bin/python scripts/bench_parsers.py [--n 10000] [--parser NAME ...]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time

from wtb_local.contract.schema import ParsedCall
from wtb_local.formats.parsers import get_parser, parser_names

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "days": {"type": "integer"},
                    "detailed": {"type": "boolean"},
                },
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "search",
            "parameters": {
                "type": "object",
                "properties": {"query": {"type": "string"}, "filters": {"type": "object"}},
            },
        },
    },
]
CITIES = ["Paris", "Rome", "東京", "New York", "São Paulo", "Zürich"]


def completions(parser_name: str, n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    parser = get_parser(parser_name)
    texts = []
    for i in range(n):
        kind = i % 3
        calls = []
        for _ in range(0 if kind == 0 else 1 if kind == 1 else 3):
            if rng.random() < 0.5:
                args = {
                    "city": rng.choice(CITIES),
                    "days": rng.randint(1, 14),
                    "detailed": rng.random() < 0.5,
                }
                calls.append(ParsedCall(name="get_weather", arguments=json.dumps(args, ensure_ascii=False)))
            else:
                args = {"query": f"museums {rng.randint(0, 999)}", "filters": {"open": True, "tags": ["art"]}}
                calls.append(ParsedCall(name="search", arguments=json.dumps(args, ensure_ascii=False)))
        content = (
            "Here is what I found: it will be sunny all week."
            if kind == 0
            else ("Let me look that up." if rng.random() < 0.3 else None)
        )
        texts.append(parser.format(content, calls))
    return texts


def bench(parser_name: str, n: int) -> tuple[float, int, int]:
    texts = completions(parser_name, n)
    parser = get_parser(parser_name)
    start = time.perf_counter()
    calls = errors = 0
    for text in texts:
        result = parser.parse(text, tools=TOOLS, finish_reason="stop")
        calls += len(result.tool_calls)
        errors += bool(result.errors)
    return time.perf_counter() - start, calls, errors


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--parser", action="append", help="only these parsers (repeatable)")
    args = ap.parse_args(argv)
    names = args.parser or parser_names()
    print(f"{'parser':14s} {'seconds':>8s} {'µs/reply':>9s} {'calls':>7s} {'errors':>6s}")
    slow = 0
    for name in names:
        seconds, calls, errors = bench(name, args.n)
        slow += seconds >= args.n / 10_000
        print(f"{name:14s} {seconds:8.3f} {seconds / args.n * 1e6:9.1f} {calls:7d} {errors:6d}")
    return 1 if slow else 0


if __name__ == "__main__":
    sys.exit(main())
