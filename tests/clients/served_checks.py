"""Checks of the served production function's answers, for scripts/test's served-function
steps: each subcommand reads what a step got and fails (exit 1, with what was wrong) unless
it is what the endpoint must answer.

    python served_checks.py json FILE              # FILE holds a JSON body
    python served_checks.py query-events BODY      # query_events, limit 3, min_severity error
    python served_checks.py rate-limited BODY      # the 41st call of a tool: its 429's error
    python served_checks.py event NAME STATUS OUT  # scripts/invoke's answer to events/NAME.json
    python served_checks.py status                 # the statusCode of the response on stdin
    python served_checks.py cold-start LOG         # the served function's cold-start line
"""

import argparse
import json
import sys


def query_events(body: str) -> None:
    r = json.loads(body)["result"]
    assert not r.get("isError"), r
    s = r["structuredContent"]
    assert s["count"] == 3 and s["truncated"] is True and s["next_cursor"], s
    assert all(e["severity"] in ("error", "critical") for e in s["events"]), s
    print("query_events through the served function: 3 events of tenant-a, next page signed")


def rate_limited(body: str) -> None:
    e = json.loads(body)["error"]
    assert e["code"] == -32600 and e["data"]["code"] == "rate_limited" and e["data"]["counter"] == "tool", e
    assert e["data"]["retryAfterMs"] >= 1 and e["data"]["limit"] == 40 and e["data"]["remaining"] == 0, e


def event(name: str, want: str, answer: str) -> None:
    out = json.loads(answer)
    assert str(out["statusCode"]) == want, f"events/{name}.json: status {out['statusCode']}, expected {want}: {out.get('body')}"
    if name.startswith("query_events"):
        result = json.loads(out["body"])["result"]
        s = result["structuredContent"]
        assert not result.get("isError") and s["count"] == 3, result
        assert all(e["severity"] in ("error", "critical") for e in s["events"]), s


def cold_start(log: str) -> None:
    lines = [json.loads(line) for line in open(log) if line.startswith("{") and '"cold start"' in line]
    assert lines, "no cold start line in the served function's log"
    r = lines[0]
    assert r["tools"] == 9 and r["resources"] == 3 and r["prompts"] == 3, r
    assert r["rate_limits"] == "mcp-rate-limits", r
    assert r["auth.issuer"].startswith("http://127.0.0.1:") and r["response_budget_bytes"] > 0 and r["version"], r
    assert not any("secret" in k.lower() or "key" in k.lower() for k in r), r
    print(f"{len(lines)} cold start line(s): version {r['version']}, {r['tools']} tools, {r['resources']} resources, "
          f"{r['prompts']} prompts, issuer {r['auth.issuer']}, budget {r['response_budget_bytes']} bytes, "
          f"rate limits in {r['rate_limits']}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="check", required=True)
    sub.add_parser("json").add_argument("file")
    sub.add_parser("query-events").add_argument("body")
    sub.add_parser("rate-limited").add_argument("body")
    e = sub.add_parser("event")
    for arg in ("name", "status", "answer"):
        e.add_argument(arg)
    sub.add_parser("status")
    sub.add_parser("cold-start").add_argument("log")
    args = parser.parse_args()
    try:
        if args.check == "json":
            json.load(open(args.file))
        elif args.check == "query-events":
            query_events(args.body)
        elif args.check == "rate-limited":
            rate_limited(args.body)
        elif args.check == "event":
            event(args.name, args.status, args.answer)
        elif args.check == "status":
            print(json.load(sys.stdin)["statusCode"])
        else:
            cold_start(args.log)
    except (AssertionError, ValueError, KeyError, TypeError) as failure:
        print(f"{args.check}: {failure!r}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
