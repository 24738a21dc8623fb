"""robots.txt conformance: plain Protego against our parser and group selection.

Runs conformance cases through

- **protego**: Scrapy's Protego parser as the crawler used it before
  (``scrapy.robotstxt.ProtegoRobotParser``: the body decoded by Scrapy, then
  ``Protego.can_fetch(url, agent)``);
- **ours**: :class:`crawler.fetch.robotsrules.RobotsRules` (RFC 9309 lines and
  groups, Protego's matching), asked with the same agent;

and prints how many expectations each meets, per suite and kind. Suites:

- ``spec-test``: Google's robotstxt-spec-test (``src/main/resources/CTC``: the
  ``correctness`` and ``stress`` textproto files; their ``test_type`` says which are
  standard and which Google-specific), read at run time from a local copy given with
  ``--spec-test DIR`` (a checkout or a bare git directory);
- ``robots_test.cc``: the ``EXPECT_TRUE/FALSE(IsUserAgentAllowed(...))`` lines of
  Google's robotstxt library tests (``robots_test.cc``; tests named ``GoogleOnly_``
  are Google-specific), read at run time from a local copy given with
  ``--robotstxt DIR``; expectations whose arguments are computed rather than
  written as literals are skipped (and counted);
- ``ours``: this file's own table of the cases behind our robots.txt issue (group
  names that are a prefix of the token, other lines inside a group, ...).

Nothing of the public suites is kept in this repository. Usage::

    .venv/bin/python bench/robots_conformance.py --spec-test PATH --robotstxt PATH [-v]

``-v`` lists the expectations that either parser misses.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from protego import Protego
from scrapy.robotstxt import decode_robotstxt

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from crawler.fetch.robotsrules import RobotsRules  # noqa: E402

STANDARD, GOOGLE = "standard", "google-specific"


@dataclass
class Case:
    suite: str
    kind: str  # STANDARD or GOOGLE
    where: str
    robotstxt: bytes
    agent: str
    url: str
    allowed: bool


# -- reading a local copy of a repository ---------------------------------------------------


class Source:
    """Files of a checkout, or of a bare git directory (read with git)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.bare = not (path / ".git").exists() and (path / "HEAD").exists()

    def files(self, under: str, suffix: str) -> list[str]:
        if self.bare:
            out = self._git("ls-tree", "-r", "--name-only", "HEAD", under)
            names = out.decode().splitlines()
        else:
            names = [str(p.relative_to(self.path)) for p in (self.path / under).rglob("*")]
        return sorted(n for n in names if n.endswith(suffix))

    def read(self, name: str) -> bytes:
        if self.bare:
            return self._git("show", f"HEAD:{name}")
        return (self.path / name).read_bytes()

    def _git(self, *args: str) -> bytes:
        return subprocess.run(
            ["git", "--git-dir", str(self.path), *args], capture_output=True, check=True
        ).stdout


# -- C-style string literals (textproto and C++) ---------------------------------------------

_ESCAPES = {"n": 10, "r": 13, "t": 9, "\\": 92, '"': 34, "'": 39, "a": 7, "b": 8, "f": 12}
_ESCAPES["v"] = 11
_ESCAPES["?"] = 63


def unescape(body: str) -> bytes:
    """The bytes of a C string literal's body (``\\xHH``, octal and the usual escapes)."""
    out = bytearray()
    i = 0
    while i < len(body):
        c = body[i]
        if c != "\\":
            out += c.encode()
            i += 1
            continue
        nxt = body[i + 1]
        if nxt == "x":
            digits = re.match(r"[0-9A-Fa-f]{1,2}", body[i + 2 :])
            assert digits is not None
            out.append(int(digits.group(0), 16))
            i += 2 + len(digits.group(0))
        elif nxt in "01234567":
            digits = re.match(r"[0-7]{1,3}", body[i + 1 :])
            assert digits is not None
            out.append(int(digits.group(0), 8) & 0xFF)
            i += 1 + len(digits.group(0))
        else:
            out.append(_ESCAPES[nxt])
            i += 2
    return bytes(out)


_STRING = r'"((?:[^"\\\n]|\\.)*)"'


# -- textproto (the spec-test files) ----------------------------------------------------------

_TOKEN = re.compile(rf"\s+|#[^\n]*|{_STRING}|([A-Za-z_][\w.]*)|(-?\d+(?:\.\d+)?)|([:\[\]{{}},;<>])")


def _tokens(text: str) -> list[tuple[str, Any]]:
    found: list[tuple[str, Any]] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise ValueError(f"textproto: cannot read {text[pos : pos + 30]!r}")
        pos = m.end()
        string, name, number, punct = m.groups()
        if string is not None:
            value = unescape(string)
            if found and found[-1][0] == "str":  # adjacent literals concatenate
                found[-1] = ("str", found[-1][1] + value)
            else:
                found.append(("str", value))
        elif name is not None:
            found.append(("name", name))
        elif number is not None:
            found.append(("num", number))
        elif punct is not None:
            found.append(("punct", punct))
    return found


def parse_textproto(text: str) -> dict[str, list[Any]]:
    tokens = _tokens(text)
    message, _ = _message(tokens, 0, None)
    return message


def _message(tokens: list[tuple[str, Any]], i: int, end: str | None) -> tuple[dict[str, Any], int]:
    fields: dict[str, list[Any]] = {}
    while i < len(tokens) and tokens[i] != ("punct", end):
        kind, name = tokens[i]
        assert kind == "name", tokens[i]
        i += 1
        if tokens[i] == ("punct", ":"):
            i += 1
        value, i = _value(tokens, i)
        fields.setdefault(name, []).extend(value if isinstance(value, list) else [value])
        if i < len(tokens) and tokens[i] in (("punct", ","), ("punct", ";")):
            i += 1
    return fields, i + 1


def _value(tokens: list[tuple[str, Any]], i: int) -> tuple[Any, int]:
    kind, value = tokens[i]
    if (kind, value) in (("punct", "{"), ("punct", "<")):
        return _message(tokens, i + 1, "}" if value == "{" else ">")
    if (kind, value) == ("punct", "["):
        items = []
        i += 1
        while tokens[i] != ("punct", "]"):
            item, i = _value(tokens, i)
            items.append(item)
            if tokens[i] == ("punct", ","):
                i += 1
        return items, i + 1
    return value, i + 1


def spec_test_cases(root: Path) -> Iterator[Case]:
    source = Source(root)
    names = source.files("src/main/resources/CTC", ".textproto")
    if not names:
        raise SystemExit(f"no src/main/resources/CTC/**/*.textproto in {root}")
    for name in names:
        spec = parse_textproto(source.read(name).decode("utf-8"))
        for test in spec.get("tests", []):
            body = b"".join(test.get("robotstxt", [b""]))
            for exp in test.get("test_expectations", []):
                outcome = exp["expected_outcome"][0]
                kind = (
                    GOOGLE
                    if exp.get("test_type", ["STANDARD"])[0] == "GOOGLE_SPECIFIC"
                    else STANDARD
                )
                yield Case(
                    "spec-test",
                    kind,
                    name.rsplit("/", 2)[-2] + "/" + name.rsplit("/", 1)[-1],
                    body,
                    exp.get("useragent", [b""])[0].decode("utf-8"),
                    exp.get("testurl", [b""])[0].decode("utf-8"),
                    outcome == "ALLOWED",
                )


# -- robots_test.cc ------------------------------------------------------------------------------

_CC_TEST = re.compile(r"^TEST\(\w+,\s*(\w+)\)\s*\{", re.M)
_CC_LITERALS = rf"(?:{_STRING}\s*)+"
_CC_ASSIGN = re.compile(
    rf"(?:const\s+)?(?:absl::string_view|std::string)\s+(\w+)\s*=\s*({_CC_LITERALS});"
)
_CC_CALL = re.compile(r"EXPECT_(TRUE|FALSE)\(\s*IsUserAgentAllowed\(")


def _cc_literal(text: str) -> bytes:
    return b"".join(unescape(m.group(1)) for m in re.finditer(_STRING, text))


def _cc_args(text: str, start: int) -> tuple[list[str], int] | None:
    """The three arguments of the call whose "(" is at *start*: split at top-level
    commas outside strings."""
    depth, i, args, current = 0, start, [], ""
    while i < len(text):
        c = text[i]
        if c == '"':
            m = re.compile(_STRING).match(text, i)
            assert m is not None
            current += m.group(0)
            i = m.end()
            continue
        if c == "(":
            depth += 1
            if depth == 1:
                i += 1
                continue
        elif c == ")":
            depth -= 1
            if depth == 0:
                args.append(current.strip())
                return args, i + 1
        elif c == "," and depth == 1:
            args.append(current.strip())
            current = ""
            i += 1
            continue
        current += c
        i += 1
    return None


def robots_test_cc_cases(root: Path) -> tuple[list[Case], int]:
    source = Source(root)
    text = source.read("robots_test.cc").decode("utf-8")
    starts = [(m.start(), m.group(1)) for m in _CC_TEST.finditer(text)]
    cases: list[Case] = []
    skipped = 0
    for n, (start, test) in enumerate(starts):
        end = starts[n + 1][0] if n + 1 < len(starts) else len(text)
        body = text[start:end]
        kind = GOOGLE if test.startswith("GoogleOnly_") else STANDARD
        # Assignments and expectations in the order they are written: a nested block
        # that redefines a name does so before its expectations.
        events = [(m.start(), "assign", m) for m in _CC_ASSIGN.finditer(body)]
        events += [(m.start(), "expect", m) for m in _CC_CALL.finditer(body)]
        names: dict[str, bytes] = {}
        for _, what, m in sorted(events, key=lambda e: e[0]):
            if what == "assign":
                names[m.group(1)] = _cc_literal(m.group(2))
                continue
            parsed = _cc_args(body, m.end() - 1)
            values: list[bytes] = []
            for arg in parsed[0] if parsed else []:
                if arg.startswith('"'):
                    values.append(_cc_literal(arg))
                elif arg in names:
                    values.append(names[arg])
            if len(values) != 3:
                skipped += 1
                continue
            robotstxt, agent, url = values
            cases.append(
                Case(
                    "robots_test.cc",
                    kind,
                    test,
                    robotstxt,
                    agent.decode("utf-8"),
                    url.decode("utf-8"),
                    m.group(1) == "TRUE",
                )
            )
    return cases, skipped


# -- our own cases --------------------------------------------------------------------------

OURS: list[tuple[str, str, str, str, bool]] = [
    # (what, robots.txt, agent, path, allowed)
    (
        "a group named by a prefix of the token does not apply",
        "User-agent: sitemap\nDisallow: /\n\nUser-agent: *\nDisallow: /private/\n",
        "sitemap-crawler",
        "/page",
        True,
    ),
    (
        "a one-letter group does not apply",
        "User-agent: s\nDisallow: /\n",
        "sitemap-crawler",
        "/page",
        True,
    ),
    (
        "our group, named with a version",
        "User-agent: sitemap-crawler/1.0\nDisallow: /x/\n",
        "sitemap-crawler",
        "/x/1",
        False,
    ),
    (
        "groups of the same name merge, in any case",
        "User-agent: Sitemap-Crawler\nDisallow: /a/\n\nUser-agent: *\nDisallow: /\n\n"
        "User-agent: SITEMAP-CRAWLER\nDisallow: /b/\n",
        "sitemap-crawler",
        "/b/1",
        False,
    ),
    (
        "groups of the same name merge: the other rule too",
        "User-agent: Sitemap-Crawler\nDisallow: /a/\n\nUser-agent: *\nDisallow: /\n\n"
        "User-agent: SITEMAP-CRAWLER\nDisallow: /b/\n",
        "sitemap-crawler",
        "/c",
        True,
    ),
    (
        "an unknown line between user-agent lines does not split the group",
        "User-agent: sitemap-crawler\nClean-param: ref /\nUser-agent: otherbot\n"
        "Disallow: /private/\n",
        "sitemap-crawler",
        "/private/x",
        False,
    ),
    (
        "a Sitemap line between user-agent lines does not split the group",
        "User-agent: sitemap-crawler\nSitemap: https://h/s.xml\nUser-agent: otherbot\n"
        "Disallow: /private/\n",
        "sitemap-crawler",
        "/private/x",
        False,
    ),
    (
        "an unknown line among the rules keeps the rules after it",
        "User-agent: sitemap-crawler\nDisallow: /a/\nNoindex: /b/\nDisallow: /c/\n",
        "sitemap-crawler",
        "/c/1",
        False,
    ),
    (
        "a Crawl-delay-only group does not reach the next group",
        "User-agent: bingbot\nCrawl-delay: 5\n\nUser-agent: *\nDisallow: /x/\n",
        "bingbot",
        "/x/1",
        True,
    ),
    (
        "'*' followed by text is every agent",
        "User-agent: * # everyone\nDisallow: /x/\n",
        "sitemap-crawler",
        "/x/1",
        False,
    ),
    (
        "the '*' group does not apply when ours exists",
        "User-agent: *\nDisallow: /\n\nUser-agent: sitemap-crawler\nAllow: /\n",
        "sitemap-crawler",
        "/x",
        True,
    ),
    (
        "CR line endings",
        "User-agent: *\rDisallow: /x/\rAllow: /x/y\r",
        "sitemap-crawler",
        "/x/1",
        False,
    ),
    (
        "a line separator other than CR and LF is not a line end",
        "User-agent: *\nDisallow: /a\x85Disallow: /\n",
        "sitemap-crawler",
        "/b",
        True,
    ),
    (
        "a rule before any user-agent line belongs to no group",
        "Disallow: /\nUser-agent: *\nDisallow: /x/\n",
        "sitemap-crawler",
        "/y",
        True,
    ),
    (
        "RFC 9309 example: foobot allowed page.html",
        "User-Agent: *\nDisallow: *.gif$\nDisallow: /example/\nAllow: /publications/\n\n"
        "User-Agent: foobot\nDisallow:/\nAllow:/example/page.html\nAllow:/example/allowed.gif\n\n"
        "User-Agent: barbot\nUser-Agent: bazbot\nDisallow: /example/page.html\n\n"
        "User-Agent: quxbot\n",
        "foobot",
        "/example/page.html",
        True,
    ),
    (
        "RFC 9309 example: bazbot shares barbot's group",
        "User-Agent: *\nDisallow: *.gif$\nDisallow: /example/\nAllow: /publications/\n\n"
        "User-Agent: foobot\nDisallow:/\nAllow:/example/page.html\nAllow:/example/allowed.gif\n\n"
        "User-Agent: barbot\nUser-Agent: bazbot\nDisallow: /example/page.html\n\n"
        "User-Agent: quxbot\n",
        "bazbot",
        "/example/page.html",
        False,
    ),
    (
        "RFC 9309 example: quxbot's empty group allows everything",
        "User-Agent: *\nDisallow: *.gif$\nDisallow: /example/\nAllow: /publications/\n\n"
        "User-Agent: foobot\nDisallow:/\nAllow:/example/page.html\nAllow:/example/allowed.gif\n\n"
        "User-Agent: barbot\nUser-Agent: bazbot\nDisallow: /example/page.html\n\n"
        "User-Agent: quxbot\n",
        "quxbot",
        "/example/x.gif",
        True,
    ),
    (
        "RFC 9309 example: foo (a prefix of foobot) gets the '*' group",
        "User-Agent: *\nDisallow: *.gif$\nDisallow: /example/\nAllow: /publications/\n\n"
        "User-Agent: foobot\nDisallow:/\nAllow:/example/page.html\nAllow:/example/allowed.gif\n\n"
        "User-Agent: barbot\nUser-Agent: bazbot\nDisallow: /example/page.html\n\n"
        "User-Agent: quxbot\n",
        "foo",
        "/publications/x",
        True,
    ),
]


def our_cases() -> list[Case]:
    return [
        Case("ours", STANDARD, what, robots.encode(), agent, f"http://example.com{path}", allowed)
        for what, robots, agent, path, allowed in OURS
    ]


# -- running ---------------------------------------------------------------------------------------


def protego(case: Case) -> bool:
    rp = Protego.parse(decode_robotstxt(case.robotstxt, None))
    return rp.can_fetch(case.url, case.agent)


def ours(case: Case) -> bool:
    return RobotsRules.parse(case.robotstxt).allowed(case.url, case.agent)


PARSERS: dict[str, Callable[[Case], bool]] = {"protego": protego, "ours": ours}


def run(case: Case, parser: Callable[[Case], bool]) -> bool:
    try:
        return parser(case) is case.allowed
    except Exception:  # a crash is a miss
        return False


def speed(repeat: int) -> dict[str, tuple[float, float]]:
    """Seconds to parse a large robots.txt (300 groups, 3,000 rules, ~100 KB) and to
    answer 10,000 questions about it, for each parser."""
    lines = []
    for g in range(300):
        lines.append(f"User-agent: bot{g}")
        lines += [f"Disallow: /g{g}/section{r}/*.php$" for r in range(5)]
        lines += [f"Allow: /g{g}/section{r}/open" for r in range(5)]
        lines.append("")
    lines += ["User-agent: *", "Disallow: /private/", "Allow: /private/open", ""]
    body = "\n".join(lines).encode()
    urls = [f"http://example.com/g{i % 300}/section{i % 7}/page{i}.php" for i in range(10_000)]
    results = {}
    for name in PARSERS:
        parse_times, query_times = [], []
        for _ in range(repeat):
            t0 = time.perf_counter()
            if name == "protego":
                rp = Protego.parse(decode_robotstxt(body, None))
                t1 = time.perf_counter()
                for url in urls:
                    rp.can_fetch(url, "sitemap-crawler")
            else:
                rules = RobotsRules.parse(body)
                rules.allowed(urls[0], "sitemap-crawler")  # selects the group
                t1 = time.perf_counter()
                for url in urls:
                    rules.allowed(url, "sitemap-crawler")
            t2 = time.perf_counter()
            parse_times.append(t1 - t0)
            query_times.append(t2 - t1)
        results[name] = (min(parse_times), min(query_times))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spec-test", type=Path, help="local copy of google/robotstxt-spec-test")
    parser.add_argument("--robotstxt", type=Path, help="local copy of google/robotstxt")
    parser.add_argument("--repeat", type=int, default=5, help="speed runs (the best counts)")
    parser.add_argument("-v", "--verbose", action="store_true", help="list the misses")
    args = parser.parse_args()

    cases: list[Case] = []
    notes = []
    if args.spec_test:
        cases += spec_test_cases(args.spec_test)
    else:
        notes.append("spec-test: not run (no --spec-test)")
    if args.robotstxt:
        found, skipped = robots_test_cc_cases(args.robotstxt)
        cases += found
        notes.append(f"robots_test.cc: {skipped} expectations with computed arguments skipped")
    else:
        notes.append("robots_test.cc: not run (no --robotstxt)")
    cases += our_cases()

    groups: dict[tuple[str, str], list[Case]] = {}
    for case in cases:
        groups.setdefault((case.suite, case.kind), []).append(case)
    print(f"{'suite':16} {'kind':16} {'cases':>6} {'protego':>8} {'ours':>8}")
    totals = {name: 0 for name in PARSERS}
    misses: list[str] = []
    for (suite, kind), group in groups.items():
        passed = {}
        for name, fn in PARSERS.items():
            ok = [run(case, fn) for case in group]
            passed[name] = sum(ok)
            totals[name] += sum(ok)
            misses += [
                f"  {name:8} misses {suite}/{case.where}: {case.agent!r} {case.url!r} "
                f"expected {'allowed' if case.allowed else 'disallowed'}; "
                f"robots.txt {case.robotstxt[:120]!r}"
                for case, good in zip(group, ok, strict=True)
                if not good
            ]
        print(f"{suite:16} {kind:16} {len(group):>6} {passed['protego']:>8} {passed['ours']:>8}")
    print(f"{'all':16} {'':16} {len(cases):>6} {totals['protego']:>8} {totals['ours']:>8}")
    for note in notes:
        print(note)
    timing = speed(args.repeat)
    for name, (parse_s, query_s) in timing.items():
        print(
            f"speed {name:8} parse {parse_s * 1000:7.2f} ms, "
            f"10,000 questions {query_s * 1000:7.2f} ms"
        )
    if args.verbose:
        print("\n".join(misses))


if __name__ == "__main__":
    main()
