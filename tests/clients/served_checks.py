"""Checks of the served production function's answers, for scripts/test's served-function
steps: each subcommand reads what a step got and fails (exit 1, with what was wrong) unless
it is what the endpoint must answer.

    python served_checks.py json FILE              # FILE holds a JSON body
    python served_checks.py event NAME STATUS OUT  # scripts/invoke's answer to events/NAME.json
    python served_checks.py status                 # the statusCode of the response on stdin

(The checks of the served function's HTTP answers are Rust tests: tests/served.rs.)
"""

import argparse
import json
import sys


def event(name: str, want: str, answer: str) -> None:
    out = json.loads(answer)
    assert str(out["statusCode"]) == want, f"events/{name}.json: status {out['statusCode']}, expected {want}: {out.get('body')}"
    if name.startswith("query_events"):
        result = json.loads(out["body"])["result"]
        s = result["structuredContent"]
        assert not result.get("isError") and s["count"] == 3, result
        assert all(e["severity"] in ("error", "critical") for e in s["events"]), s


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="check", required=True)
    sub.add_parser("json").add_argument("file")
    e = sub.add_parser("event")
    for arg in ("name", "status", "answer"):
        e.add_argument(arg)
    sub.add_parser("status")
    args = parser.parse_args()
    try:
        if args.check == "json":
            json.load(open(args.file))
        elif args.check == "event":
            event(args.name, args.status, args.answer)
        else:
            print(json.load(sys.stdin)["statusCode"])
    except (AssertionError, ValueError, KeyError, TypeError) as failure:
        print(f"{args.check}: {failure!r}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
