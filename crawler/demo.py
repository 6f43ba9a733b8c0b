"""``python -m crawler.demo`` (``make demo``): crawl the sample site with dedup on, then summarise.

Starts ``python -m crawler.sample_site`` on a free loopback port, runs a real
``scrapy crawl site`` from the repository root into a fresh ``out/demo/``, stops the
server, and prints what was kept, flagged and dropped, and where everything went.
Politeness delays are switched off for the run: the site is on loopback. The dropped log is
written beside the index (``out/demo/index/dropped.jsonl``, the default every ``dedup``
command looks in), and session ids are stripped from the links (:mod:`crawler.urls`), so a
group's kept page never has a ``;jsessionid=`` URL.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any, Sequence

from crawler.sample_site import spawn, terminate
from dedup.verdicts import legend, reason

__all__ = ["main"]

ROOT = Path(__file__).resolve().parents[1]
FLAGGED = ("near_duplicate", "duplicate")


def _env() -> dict[str, str]:
    env = dict(os.environ)
    if "NLTK_DATA" not in env and (ROOT / ".nltk_data").is_dir():
        env["NLTK_DATA"] = str(ROOT / ".nltk_data")
    return env


def _jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def summarise(base: str, items: list[dict[str, Any]], dropped: list[dict[str, Any]], out: Path,
              seconds: float) -> str:
    """The human summary of one demo crawl."""
    rel = out.relative_to(ROOT) if out.is_relative_to(ROOT) else out

    def short(url: str | None) -> str:
        return "/" + url[len(base):] if url and url.startswith(base) else str(url)

    kept = Counter(i["dedup"]["status"] for i in items)
    flagged = [i for i in items if i["dedup"]["status"] in FLAGGED]
    errors = [i for i in items if i["dedup"]["status"] == "error"]
    lines = [
        f"Crawled {base} in {seconds:.1f} s: {len(items) + len(dropped)} pages",
        f"  kept unique      {kept['unique']:>3}",
        f"  kept, flagged    {len(flagged):>3}  "
        + ", ".join(f"{s} {kept[s]}" for s in FLAGGED if kept[s]),
    ]
    width = max([len(short(i["url"])) for i in flagged + dropped] or [0])
    for i in flagged:
        v = i["dedup"]
        lines.append(f"      {short(i['url']):<{width}}  {v['status']} of {short(v['duplicate_of'])}"
                     f"  ({reason(v, why_copy=False)})")
    if flagged:
        lines.append(f"      ({legend(flagged[0]['dedup'].get('thresholds') or {})})")
    dropped_by = Counter(d["verdict"]["status"] for d in dropped)
    lines.append(f"  dropped          {len(dropped):>3}  " + ", ".join(f"{s} {n}" for s, n in dropped_by.items()))
    for d in dropped:
        lines.append(f"      {short(d['url']):<{width}}  {d['verdict']['status']} of "
                     f"{short(d['verdict']['duplicate_of'])}")
    if errors:
        lines.append(f"  not checked (errors, kept) {len(errors)}: see crawl.log")
    lines += [
        "",
        f"Outputs in {rel}/:",
        f"  items.jsonl          the {len(items)} kept items (url, title, text, fetched_at, dedup verdict)",
        "  crawl.log            the Scrapy log (stats at the end: dedup/...)",
        f"  index/               dedup index and search index: DEDUP_INDEX=local://{rel}/index",
        f"  index/dropped.jsonl  the {len(dropped)} dropped items, each with its verdict",
        "",
        "Look around (every command finds the dropped log beside --index):",
        f"  .venv/bin/dedup search QUERY --index local://{rel}/index",
        f"  .venv/bin/dedup dropped list --index local://{rel}/index",
        f"  .venv/bin/dedup report -o {rel}/report.html --index local://{rel}/index",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m crawler.demo", description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "out" / "demo"), help="output folder, emptied first "
                        "(default: out/demo)")
    args = parser.parse_args(argv)
    out = Path(args.out).resolve()
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    rel = out.relative_to(ROOT) if out.is_relative_to(ROOT) else out
    env = _env()
    scrapy = str(Path(sys.executable).with_name("scrapy"))

    site, base = spawn(env)
    try:
        print(f"Sample site serving {base} (pid {site.pid})", flush=True)
        cmd = [scrapy, "crawl", "site", "-a", f"start_url={base}",
               # no DEDUP_DROPPED_LOG: the log goes where every dedup command looks by default,
               # index/dropped.jsonl, so `dedup dropped list --index local://out/demo/index` finds it
               "-s", f"DEDUP_INDEX=local://{rel}/index",
               # the sample site's ;jsessionid= and ?sid= links are fetched once, under their clean URL;
               # -s ADDONS replaces the project's ADDONS (settings.py), so the dedup add-on is named again
               "-s", 'ADDONS={"crawler.addon.DedupAddon": 100, "crawler.urls.SessionIdAddon": 200}',
               "-O", f"{rel}/items.jsonl",
               # loopback: no politeness delays, one request at a time for a reproducible order
               "-s", "AUTOTHROTTLE_ENABLED=False", "-s", "DOWNLOAD_DELAY=0", "-s", "CONCURRENT_REQUESTS=1",
               "-s", "LOG_LEVEL=INFO", "-s", f"LOG_FILE={rel}/crawl.log"]
        print("$ " + shlex.join(["scrapy", *cmd[1:]]), flush=True)
        start = time.perf_counter()
        result = subprocess.run(cmd, cwd=ROOT, env=env)
        seconds = time.perf_counter() - start
    finally:
        terminate(site)
    if result.returncode != 0:
        log = out / "crawl.log"
        tail = log.read_text(encoding="utf-8").splitlines()[-30:] if log.exists() else []
        print("\n".join(tail), file=sys.stderr)
        print(f"the crawl failed (exit status {result.returncode}); log: {log}", file=sys.stderr)
        return result.returncode
    print()
    print(summarise(base, _jsonl(out / "items.jsonl"), _jsonl(out / "index" / "dropped.jsonl"), out, seconds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
