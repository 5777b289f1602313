#!/usr/bin/env python3
"""Renumbers (and renames) tutorial chapters across the whole repository.

A maintainer tool, not needed to build. Inserting or splitting a chapter moves the ones after
it; this script does the move in one go: it renames every file keyed by a chapter's stem
(`git mv`: the program tutorials/NN_topic.cpp, its saved output tutorials/saidas/NN_topic.txt)
and rewrites every reference to the chapter in the tracked text files, all at once (a chapter
19 that becomes 20 is never renumbered again as the old chapter 20).

Usage (from anywhere inside the repository):

    scripts/renumber_chapters.py [--dry-run] RULE...

A RULE is one of
    18_cabecas_gqa=18_multi_cabecas   one chapter: old stem = new stem (number and/or topic)
    19-35:+1                          a range of chapter numbers shifted, topics kept

Example, to free number 19 for a new chapter after 18 (and rename 18's topic):

    scripts/renumber_chapters.py --dry-run 18_cabecas_gqa=18_multi_cabecas 19-35:+1

What counts as a reference to a chapter (anything else is left alone):
  - a chapter's stem (`18_cabecas_gqa`), anywhere; its topic as a quoted string
    ("cabecas_gqa", how tests/cli/docs_claims_test.cpp finds a chapter);
  - a number, or a list or range of numbers ("26 a 29", "22, 26 e 29", "24–27", "16 and 28"),
    right after capítulo(s) / Capítulo(s) / chapter(s) / Chapter(s) / cap. / ch.;
  - `tut::capitulo(NN, ...)` and, in the tests, output_of(NN), saved_output_of(NN),
    name_of(NN), checked_output(NN, ...), test names ChNN... / ChapterNN..., the set literal of
    chapter numbers (`std::set<int> x = {...}`), the variables cNN / chNN of a chapter's output
    and the comment lines "// NN: ..." of tests/cli/tutorials_test.cpp;
  - in a Markdown table: the "#" column of a row whose next cell names a chapter's stem
    (an index row) and every number of a column whose header says capítulo(s) / chapter(s) /
    tutoriais / tutorials;
  - a bullet that starts with numbers and a dash ("- 26 — o treino ...", the "Tutoriais"
    lists of docs/*.md).

Numbers that are not chapters share the two-digit style (exercise 16 is
`exercicios/16_perplexidade_e_bits`, "parte 2", steps, sizes): they are never touched unless
a rule above names them. What the rules cannot decide is printed at the end as "leftover
hits to check by hand": a number of a renumbered chapter left unchanged within a few words after
"capítulo"/"chapter"/"tutorial", or a line that still names an old stem.

The script prints, for each file, every change (old -> new, with the line). With --dry-run it
only prints; without, it writes the files and runs `git mv`.
"""

import argparse
import os
import re
import subprocess
import sys

NUM = r"(?<![\w.,])\d{1,2}(?!\w)"
# A run of spaces, possibly across one line break and the comment marker of the next line, or
# across the seam of two C++ string literals ("... capítulos\n"  /  "21 a 24 ...").
S = r'(?:[ \t]*(?:\\n")?[ \t]*\n[ \t]*(?://|#|\*|")?[ \t]*|[ \t]+)'
# A list of chapter numbers: "26", "26 a 29", "22, 26 e 29", "24–27", "16 and 28", with an
# optional parenthesis after each number ("22 (o fluxo residual), 29 (o Tracer) e 26").
SEP = (r"(?:[ \t]*,(?:" + S + r"(?:e|and))?" + S + r"|" + S + r"(?:e|a|and|to|or|ou|até)" + S +
       r"|[ \t]*[–-][ \t]*|[ \t]*/[ \t]*)")
ITEM = NUM + r"(?:\s*\([^()\n]{0,80}\))?"
LIST = ITEM + r"(?:" + SEP + ITEM + r")*"
KEYWORD = r"(?:[Cc]ap[íi]tulos?|CAP[ÍI]TULOS?|[Cc]hapters?|[Cc]ap\.|[Cc]h\.)"

TEXT_EXTENSIONS = (".md", ".cpp", ".hpp", ".h", ".txt", ".cmake", ".py", ".sh", ".yml", ".yaml",
                   ".html", ".js", ".css", ".json", ".in")
SKIP_PREFIXES = ("data/", "third_party/", "build")


def git(*args, cwd):
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout


def parse_rules(rules, chapters):
    """Returns {old_stem: new_stem} for every chapter that moves or is renamed."""
    by_number = {int(s[:2]): s for s in chapters}
    mapping = {}
    for rule in rules:
        m = re.fullmatch(r"(\d\d_\w+)=(\d\d_\w+)", rule)
        if m:
            if m.group(1) not in chapters:
                sys.exit(f"renumber_chapters: no chapter {m.group(1)} in tutorials/")
            if m.group(1) in mapping:
                sys.exit(f"renumber_chapters: two rules move {m.group(1)}")
            mapping[m.group(1)] = m.group(2)
            continue
        m = re.fullmatch(r"(\d+)-(\d+):([+-]\d+)", rule)
        if m:
            first, last, delta = int(m.group(1)), int(m.group(2)), int(m.group(3))
            for n in range(first, last + 1):
                if n not in by_number:
                    sys.exit(f"renumber_chapters: no chapter {n:02d} in tutorials/")
                old = by_number[n]
                if old in mapping:
                    sys.exit(f"renumber_chapters: two rules move {old} (a stem rule and a range)")
                mapping[old] = f"{n + delta:02d}{old[2:]}"
            continue
        sys.exit(f"renumber_chapters: cannot read the rule {rule!r} "
                 "(use OLD_STEM=NEW_STEM or FIRST-LAST:+DELTA)")
    final = {by_number[n] if by_number[n] not in mapping else mapping[by_number[n]]
             for n in by_number}
    if len(final) != len(by_number) or len({s[:2] for s in final}) != len(final):
        sys.exit("renumber_chapters: two chapters would end with the same number: "
                 + ", ".join(sorted(final)))
    return mapping


class Rewriter:
    def __init__(self, mapping):
        self.stems = mapping
        self.numbers = {int(o[:2]): int(n[:2]) for o, n in mapping.items() if o[:2] != n[:2]}
        self.topics = {o[3:]: n[3:] for o, n in mapping.items() if o[3:] != n[3:]}
        self.chapter_stems = None  # set by main: every old stem, to recognise index rows

    def num(self, text):
        """Renumbers one number token, keeping its width ("09" stays two digits)."""
        n = int(text)
        if n not in self.numbers:
            return text
        new = self.numbers[n]
        return f"{new:02d}" if len(text) == 2 else str(new)

    def numbers_in(self, text):
        return re.sub(NUM, lambda m: self.num(m.group()), text)

    def list_in(self, text):
        """Renumbers the numbers of a LIST (not those inside its parentheses)."""
        out, depth, i = [], 0, 0
        for m in re.finditer(r"\(|\)|" + NUM, text):
            out.append(text[i:m.start()])
            tok = m.group()
            if tok == "(":
                depth += 1
            elif tok == ")":
                depth -= 1
            elif depth == 0:
                tok = self.num(tok)
            out.append(tok)
            i = m.end()
        out.append(text[i:])
        return "".join(out)

    def rewrite(self, path, text):
        """Returns the rewritten text. A line that names this script (an example command in a
        README) is left alone."""
        lines = text.split("\n")
        kept = {}
        for i, line in enumerate(lines):
            if "renumber_chapters" in line:
                kept[i] = line
                lines[i] = "\x00"
        out = self.rewrite_lines(path, "\n".join(lines)).split("\n")
        k = iter(sorted(kept))
        for i, line in enumerate(out):
            if line == "\x00":
                out[i] = kept[next(k)]
        return "\n".join(out)

    def rewrite_lines(self, path, text):
        """Every rule applied in one pass per rule, on the original numbers: the rules never
        see a number another rule already changed."""
        # 1. Stems and quoted topics, in one pass (longest first).
        if self.stems:
            pattern = r"(?<![\w])(" + "|".join(
                re.escape(s) for s in sorted(self.stems, key=len, reverse=True)) + r")(?![a-z])"
            text = re.sub(pattern, lambda m: self.stems[m.group(1)], text)
        if self.topics:
            pattern = r'"(' + "|".join(re.escape(t) for t in self.topics) + r')"'
            text = re.sub(pattern, lambda m: '"' + self.topics[m.group(1)] + '"', text)
        self.last_edits = {}
        self.last_text = text
        if not self.numbers:
            return text
        # Every number rule below is collected as (start, end, replacement) on the text after
        # the stems, then applied together, so a number is renumbered at most once.
        edits = {}

        def mark(start, end, new):
            if (start, end) not in edits and text[start:end] != new:
                edits[(start, end)] = new

        def mark_list(m, group):
            start = m.start(group)
            mark(start, m.end(group), self.list_in(m.group(group)))

        for m in re.finditer(KEYWORD + r"(" + S + r"|-)(" + LIST + ")", text):
            mark_list(m, 2)
        code_calls = r"\b(?:capitulo|output_of|saved_output_of|name_of|checked_output)\(\s*(\d+)"
        for m in re.finditer(code_calls, text):
            mark(m.start(1), m.end(1), self.num(m.group(1)))
        for m in re.finditer(r"\b(?:Ch|Chapter)(\d\d)(?=[A-Z_])", text):
            mark(m.start(1), m.end(1), self.num(m.group(1)))
        for m in re.finditer(r"^([ \t]*[-*] )(" + LIST + r")(?= — | - )", text, re.M):
            mark_list(m, 2)
        if re.search(r"tests/.*_test\.cpp$", path):
            for m in re.finditer(r"std::set<int>\s+\w+\s*=\s*\{([\d,\s]+)\}", text):
                mark(m.start(1), m.end(1), self.numbers_in(m.group(1)))
            for m in re.finditer(r"\bc(?:h)?(\d\d)(?:f)?\b", text):
                mark(m.start(1), m.end(1), self.num(m.group(1)))
            if path.endswith("tutorials_test.cpp"):
                for m in re.finditer(r"^[ \t]*// (\d\d)(?=: )", text, re.M):
                    mark(m.start(1), m.end(1), self.num(m.group(1)))
        if path.endswith(".md"):
            self.tables(text, mark)
        self.last_edits = edits
        out, i = [], 0
        for (start, end), new in sorted(edits.items()):
            if start < i:
                continue  # overlapping matches of two rules: the first one wins
            out.append(text[i:start])
            out.append(new)
            i = end
        out.append(text[i:])
        return "".join(out)

    def tables(self, text, mark):
        """Index rows (# column before a chapter stem) and chapter columns of Markdown tables."""
        pos = 0
        header = None
        for line in text.splitlines(keepends=True):
            start = pos
            pos += len(line)
            stripped = line.strip()
            if not stripped.startswith("|"):
                header = None
                continue
            cells = [m for m in re.finditer(r"(?<=\|)([^|]*)(?=\|)", line)]
            if header is None:
                header = [c.group(1).strip().lower() for c in cells]
                continue
            if re.fullmatch(r"\|[-:| ]+\|", stripped):
                continue
            for k, c in enumerate(cells):
                value = c.group(1)
                name = header[k] if k < len(header) else ""
                if name == "#" and k + 1 < len(cells):
                    nxt = cells[k + 1].group(1)
                    stem = re.search(r"`(\d\d_\w+)`", nxt)
                    if stem and (stem.group(1) in self.chapter_stems or
                                 stem.group(1) in self.stems.values()):
                        m = re.search(NUM, value)
                        if m:
                            mark(start + c.start(1) + m.start(), start + c.start(1) + m.end(),
                                 self.num(m.group()))
                elif re.search(r"cap[íi]tulo|chapter|tutoria", name):
                    for m in re.finditer(LIST, value):
                        mark(start + c.start(1) + m.start(), start + c.start(1) + m.end(),
                             self.list_in(m.group()))


def leftovers(rewriter, new_text, new_stems):
    """Lines a human should look at: a number of a renumbered chapter, within a few words after
    a chapter word, that no rule changed; or an old stem that survived."""
    hits = []
    text, edits = rewriter.last_text, rewriter.last_edits
    changed = {start for start, _ in edits}
    # Numbers inside a changed list count as changed.
    spans = sorted(edits)
    old_numbers = set(rewriter.numbers)
    old_stems = [s for s in rewriter.stems if s not in new_stems]
    for lineno, line in enumerate(new_text.splitlines(), 1):
        for s in old_stems:
            if re.search(r"(?<!\w)" + re.escape(s) + r"(?![a-z])", line):
                hits.append((lineno, f"old stem {s}", line))
    for m in re.finditer(r"(?i)(cap[íi]tulos?|chapters?|tutoria\w*|\bch\b)", text):
        window = text[m.end():m.end() + 60].split("\n")[0]
        for n in re.finditer(NUM + r"(?! ?(?:min|%|s\b))", window):
            at = m.end() + n.start()
            if window[max(0, n.start() - 1):n.start()] == "~":
                continue
            if int(n.group()) not in old_numbers or at in changed:
                continue
            if any(s <= at < e for s, e in spans):
                continue
            lineno = text.count("\n", 0, at) + 1
            line = text.splitlines()[lineno - 1]
            hits.append((lineno, f"number {n.group()} after '{m.group()}'", line))
    seen, unique = set(), []
    for h in hits:
        if (h[0], h[1]) not in seen:
            seen.add((h[0], h[1]))
            unique.append(h)
    return unique


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog="See the module docstring for the rules.")
    parser.add_argument("rules", nargs="+", help="OLD_STEM=NEW_STEM or FIRST-LAST:+DELTA")
    parser.add_argument("--dry-run", action="store_true", help="print the changes, write nothing")
    args = parser.parse_args()

    root = git("rev-parse", "--show-toplevel", cwd=os.getcwd()).strip()
    chapters = sorted(f[:-4] for f in os.listdir(os.path.join(root, "tutorials"))
                      if re.fullmatch(r"\d\d_\w+\.cpp", f))
    mapping = parse_rules(args.rules, set(chapters))
    rewriter = Rewriter(mapping)
    rewriter.chapter_stems = set(chapters)
    print("table:")
    for old, new in sorted(mapping.items()):
        print(f"  {old} -> {new}")

    files = [f for f in git("ls-files", cwd=root).splitlines()
             if f.endswith(TEXT_EXTENSIONS) or os.path.basename(f) == "CMakeLists.txt"]
    files = [f for f in files
             if not f.startswith(SKIP_PREFIXES) and f != "scripts/renumber_chapters.py"]

    # Refuse to start on a tree with changes: a failed run must be undone with git alone.
    if not args.dry_run and git("status", "--porcelain", cwd=root).strip():
        sys.exit("renumber_chapters: the working tree has changes; commit or stash them first")

    # Files keyed by a stem (not the exercises: their numbers are not chapters).
    moves = []
    for f in git("ls-files", "tutorials", cwd=root).splitlines():
        if f.startswith("tutorials/exercicios/"):
            continue
        base = os.path.basename(f)
        stem = base.split(".", 1)[0]
        if stem in mapping:
            moves.append((f, os.path.join(os.path.dirname(f), mapping[stem] + base[len(stem):])))

    changed_files = 0
    all_hits = []
    moved = dict(moves)
    for f in files:
        full = os.path.join(root, f)
        try:
            with open(full, encoding="utf-8", newline="") as fh:  # keep CRLF as it is
                text = fh.read()
        except (UnicodeDecodeError, FileNotFoundError):
            continue
        new = rewriter.rewrite(f, text)
        shown = moved.get(f, f)
        if new != text:
            changed_files += 1
            print(f"\n{shown}" + (f" (was {f})" if shown != f else "") + ":")
            old_lines, new_lines = text.splitlines(), new.splitlines()
            if len(old_lines) == len(new_lines):
                for k, (a, b) in enumerate(zip(old_lines, new_lines), 1):
                    if a != b:
                        print(f"  {k}: - {a.strip()}\n  {k}: + {b.strip()}")
            else:
                print("  (line count changed)")
            if not args.dry_run:
                with open(full, "w", encoding="utf-8", newline="") as fh:
                    fh.write(new)
        for lineno, why, line in leftovers(rewriter, new, set(mapping.values())):
            all_hits.append((shown, lineno, why, line.strip()))

    print("\nrenames:")
    for old, new in moves:
        print(f"  git mv {old} {new}")
        if not args.dry_run:
            # Two-step move so that a chain (19 -> 20 while 20 -> 21) never collides.
            git("mv", old, new + ".renumbering", cwd=root)
    if not args.dry_run:
        for old, new in moves:
            git("mv", new + ".renumbering", new, cwd=root)

    print(f"\n{changed_files} files rewritten, {len(moves)} files renamed"
          + (" (dry run: nothing written)" if args.dry_run else ""))
    print(f"\nleftover hits to check by hand ({len(all_hits)}):")
    for f, lineno, why, line in all_hits:
        print(f"  {f}:{lineno}: {why}: {line[:140]}")


if __name__ == "__main__":
    main()
