#!/usr/bin/env python3
"""Checks that the project's documentation has no dangling reference.

Usage: check_doc_links.py [ROOT]   (ROOT: the project's root, default the folder above tests/)

It reports, with file:line, and exits 1 on any:
- a Markdown link [text](target) to a file of the project that does not exist, or to a
  #heading that the target file does not have (GitHub's anchors);
- a reference from a source comment or a document to a section of a README,
  `modules/README.md, "Correctors"`, whose README has no heading ending in that name;
- a pointer out of the project to the equations it implements (`SCIENCE.md`, a `seeds/`
  folder): the project states its own equations in modules/README.md.
"""
import os
import re
import sys

SKIPPED_FOLDERS = {".git", "build", "node_modules", "__pycache__"}
SOURCE_SUFFIXES = (".md", ".cpp", ".hpp", ".cppm", ".py", ".R", ".toml", ".txt", ".cmake", ".in", ".sh")
MARKDOWN_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
README_SECTION = re.compile(r"([\w./-]*README\.md),?\s+\"([^\"]+)\"")
BOLD_TERM = re.compile(r"\s*[-*] \*\*([^*]+)\*\*")
OUTSIDE_POINTERS = re.compile(r"SCIENCE\.md|\bseeds/")


def project_files(root):
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = [s for s in subfolders if s not in SKIPPED_FOLDERS]
        for name in files:
            if name.endswith(SOURCE_SUFFIXES) and name != os.path.basename(__file__):
                yield os.path.join(folder, name)


def headings(markdown_file, with_terms=False):
    """The titles of a Markdown file's headings (outside code fences); with_terms, also the bold
    terms that open a list item (`- **SAGA** (Dubey et al. 2016): ...`), which prose cites too."""
    titles, in_fence = [], False
    with open(markdown_file, encoding="utf-8") as f:
        for line in f:
            if line.startswith("```"):
                in_fence = not in_fence
            elif not in_fence and line.startswith("#"):
                titles.append(line.lstrip("#").strip())
            elif not in_fence and with_terms and (term := BOLD_TERM.match(line)):
                titles.append(term.group(1))
    return titles


def github_anchor(title):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    kept = "".join(c for c in title.lower() if c.isalnum() or c in " -_")
    return kept.replace(" ", "-")


def check_link(root, source, target):
    path, _, anchor = target.partition("#")
    resolved = os.path.normpath(os.path.join(os.path.dirname(source), path)) if path else source
    if not os.path.exists(resolved):
        return f"links to {target}, which does not exist"
    if not os.path.realpath(resolved).startswith(os.path.realpath(root) + os.sep):
        return f"links to {target}, outside the project"
    if anchor and resolved.endswith(".md") and anchor not in map(github_anchor, headings(resolved)):
        return f"links to {target}, but {os.path.relpath(resolved, root)} has no such heading"
    return None


def readme_for(root, source, named):
    """The README a reference names: as a path from the root, else beside the source."""
    for candidate in (os.path.join(root, named), os.path.join(os.path.dirname(source), named)):
        if os.path.isfile(candidate):
            return candidate
    return None


def check_section(root, source, named, section):
    readme = readme_for(root, source, named)
    if readme is None:
        return f"cites {named}, which does not exist"
    if not any(title.strip("`* ").endswith(section) for title in headings(readme, with_terms=True)):
        return f'cites {named}, "{section}", but {os.path.relpath(readme, root)} has no such heading'
    return None


def problems_in(root, source):
    with open(source, encoding="utf-8", errors="replace") as f:
        text = f.read()
    # References wrap across comment lines: join each line with the next before matching.
    lines = text.split("\n")
    for number, line in enumerate(lines, start=1):
        if OUTSIDE_POINTERS.search(line):
            yield number, "points outside the project for its equations (SCIENCE.md, seeds/)"
        if source.endswith(".md"):
            for target in MARKDOWN_LINK.findall(line):
                if not re.match(r"[a-z]+:", target):
                    problem = check_link(root, source, target)
                    if problem:
                        yield number, problem
        following = lines[number].lstrip(" /#*") if number < len(lines) else ""
        for match in README_SECTION.finditer(line + " " + following):
            if match.start() < len(line):  # a reference that starts on this line
                problem = check_section(root, source, *match.groups())
                if problem:
                    yield number, problem


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))
    found = 0
    for source in sorted(project_files(root)):
        for number, problem in problems_in(root, source):
            print(f"{os.path.relpath(source, root)}:{number}: {problem}")
            found += 1
    if found:
        print(f"{found} dangling reference(s)")
        return 1
    print("documentation references: all resolve")
    return 0


if __name__ == "__main__":
    sys.exit(main())
