#!/usr/bin/env python3
"""The layering check: which folder may use which, enforced on #include lines and CMake links.

The allowed graph is written once, in docs/architecture.md, in the fenced block after the line
"<!-- layers: read by scripts/check_layers.py -->": one line per folder, "FOLDER: FOLDER ...", naming every folder
whose headers its files may include and whose targets its CMake targets may link ("*": anything). A file belongs to
the longest folder of the table its path starts with (core/reference/x.cpp to core/reference, core/glm/x.cpp to core).

Fails (exit 1), naming file and line, when
  - a source file includes a file of a folder its own folder may not include (e.g. core/ including stream/, or a
    production folder including core/reference/);
  - a CMake target links a target defined in a folder its folder may not use (e.g. rtf_core, rtfmri or rtf_stream
    linking rtf_reference, the references' library);
  - the includes between areas (core/glm, stream/server, cli, ...: a top folder and its first subfolder) form a cycle.

usage: scripts/check_layers.py [--root DIR] [--rules FILE]   (default: the repository this script is in, and its
       docs/architecture.md). Prints "layers: ok (...)" and exits 0 when nothing is wrong.
"""

import argparse
import os
import re
import sys

RULES_MARKER = "<!-- layers: read by scripts/check_layers.py -->"
SOURCE_SUFFIXES = (".cpp", ".cc", ".c", ".hpp", ".hh", ".h", ".inl", ".cl", ".clh")
INCLUDE = re.compile(r'^\s*#\s*include\s*(?:"([^"]+)"|<([^>]+)>)')
CMAKE_TARGET_DEFINITION = ("add_library", "add_executable")
CMAKE_LINK_COMMANDS = ("target_link_libraries", "link_libraries")


def read_rules(path):
    """{folder: set of folders it may use, or None for anything}, from the block after RULES_MARKER."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    try:
        start = lines.index(RULES_MARKER)
    except ValueError:
        sys.exit(f"check_layers: {path} has no line '{RULES_MARKER}' before the layers block")
    rules = {}
    fence = None
    for number, line in enumerate(lines[start + 1:], start + 2):
        if fence is None:
            if line.startswith("```"):
                fence = line[:3]
            continue
        if line.startswith(fence):
            break
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        folder, sep, allowed = text.partition(":")
        if not sep:
            sys.exit(f"check_layers: {path}:{number}: expected 'FOLDER: FOLDER ...', got '{line}'")
        names = allowed.split()
        rules[folder.strip()] = None if names == ["*"] else set(names) | {folder.strip()}
    if not rules:
        sys.exit(f"check_layers: {path}: the block after '{RULES_MARKER}' names no folder")
    return rules


def folder_of(relative, rules):
    """The longest folder of the table that `relative` (a/b/c.hpp) lies in, or None."""
    parts = relative.split("/")
    for n in range(len(parts) - 1, 0, -1):
        candidate = "/".join(parts[:n])
        if candidate in rules:
            return candidate
    return None


def area_of(relative):
    """The area of a file for the cycle check: its top folder and first subfolder (core/glm), or its top folder."""
    parts = relative.split("/")
    return "/".join(parts[:2]) if len(parts) > 2 else parts[0]


def source_files(root, rules):
    tops = sorted({folder.split("/")[0] for folder in rules})
    for top in tops:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for name in sorted(filenames):
                path = os.path.join(dirpath, name)
                yield os.path.relpath(path, root).replace(os.sep, "/"), path


def resolve_include(root, including, target, rules):
    """The repository-relative path an #include names, or None for a header outside the repository."""
    candidates = [target]
    local = os.path.normpath(os.path.join(os.path.dirname(including), target)).replace(os.sep, "/")
    if not local.startswith(".."):
        candidates.insert(0, local)  # "x.clh" beside the file wins over a same-named path from the root
    for candidate in candidates:
        if os.path.exists(os.path.join(root, candidate)):
            return candidate
    if folder_of(target, rules) is not None:
        return target  # a project path that does not exist (generated, or a typo): still judged by its folder
    return None


def check_includes(root, rules):
    errors = []
    edges = {}  # (area, area) -> first "file:line" seen
    for relative, path in source_files(root, rules):
        if not relative.endswith(SOURCE_SUFFIXES):
            continue
        folder = folder_of(relative, rules)
        if folder is None:
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            for number, line in enumerate(f, 1):
                match = INCLUDE.match(line)
                if not match:
                    continue
                quoted, angled = match.groups()
                target = resolve_include(root, relative, quoted or angled, rules)
                if target is None:
                    continue
                target_folder = folder_of(target, rules)
                if target_folder is None:
                    continue
                allowed = rules[folder]
                if allowed is not None and target_folder not in allowed:
                    errors.append(f"{relative}:{number}: {folder}/ may not include {target_folder}/ ({target}); "
                                  f"{folder}/ may include: {' '.join(sorted(allowed))} (docs/architecture.md)")
                a, b = area_of(relative), area_of(target)
                if a != b:
                    edges.setdefault((a, b), f"{relative}:{number}")
    return errors, edges


def cycles(edges):
    """Strongly connected components of more than one area (Tarjan), each as a sorted list."""
    graph = {}
    for a, b in edges:
        graph.setdefault(a, []).append(b)
        graph.setdefault(b, [])
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(max(1000, 4 * len(graph) + 100))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def check_cycles(edges):
    errors = []
    for component in cycles(edges):
        members = set(component)
        lines = [f"  {a} -> {b}: {where}" for (a, b), where in sorted(edges.items()) if a in members and b in members]
        errors.append("include cycle between " + ", ".join(component) + ":\n" + "\n".join(lines))
    return errors


def cmake_calls(text):
    """(command, [(argument, line)], line) for each command call of a CMake file, comments and quotes understood."""
    calls = []
    i, line, n = 0, 1, len(text)
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif c == "#":
            while i < n and text[i] != "\n":
                i += 1
        elif c.isalpha() or c == "_":
            start = i
            while i < n and (text[i].isalnum() or text[i] == "_"):
                i += 1
            name, name_line = text[start:i].lower(), line
            while i < n and text[i] in " \t":
                i += 1
            if i >= n or text[i] != "(":
                continue
            i += 1
            depth, args, token, token_line = 1, [], "", line
            while i < n and depth > 0:
                c = text[i]
                if c == '"':
                    if not token:
                        token_line = line
                    i += 1
                    while i < n and text[i] != '"':
                        if text[i] == "\\" and i + 1 < n:
                            i += 1
                        if text[i] == "\n":
                            line += 1
                        token += text[i]
                        i += 1
                elif c == "#" and not token:
                    while i < n and text[i] != "\n":
                        i += 1
                    continue
                elif c in " \t\n()":
                    if token:
                        args.append((token, token_line))
                        token = ""
                    if c == "\n":
                        line += 1
                    depth += {"(": 1, ")": -1}.get(c, 0)
                else:
                    if not token:
                        token_line = line
                    token += c
                i += 1
            calls.append((name, args, name_line))
        else:
            i += 1
    return calls


def cmake_files(root, rules):
    for relative, path in source_files(root, rules):
        if os.path.basename(relative) == "CMakeLists.txt" or relative.endswith(".cmake"):
            yield relative, path


def check_links(root, rules):
    parsed = []
    defined_in = {}  # target -> folder of the CMake file that defines it
    for relative, path in cmake_files(root, rules):
        folder = folder_of(relative, rules)
        if folder is None:
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            calls = cmake_calls(f.read())
        parsed.append((relative, folder, calls))
        for name, args, _ in calls:
            if name in CMAKE_TARGET_DEFINITION and args and "$" not in args[0][0]:
                defined_in[args[0][0]] = folder
    errors = []
    for relative, folder, calls in parsed:
        allowed = rules[folder]
        if allowed is None:
            continue
        for name, args, _ in calls:
            if name not in CMAKE_LINK_COMMANDS:
                continue
            linked = args[1:] if name == "target_link_libraries" else args
            for token, line in linked:
                for word in re.split(r"[\s;:<>,$]+", token):
                    target_folder = defined_in.get(word)
                    if target_folder is not None and target_folder not in allowed:
                        what = "the references" if target_folder == "core/reference" else f"{target_folder}/"
                        errors.append(f"{relative}:{line}: a target of {folder}/ links {word} ({what}, defined in "
                                      f"{target_folder}/); {folder}/ may use: {' '.join(sorted(allowed))} "
                                      f"(docs/architecture.md)")
    return errors, len(defined_in)


def main():
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=here, help="the tree to check (default: this repository)")
    parser.add_argument("--rules", help="the file holding the layers block (default: ROOT/docs/architecture.md)")
    options = parser.parse_args()
    root = os.path.abspath(options.root)
    rules = read_rules(options.rules or os.path.join(root, "docs", "architecture.md"))
    include_errors, edges = check_includes(root, rules)
    link_errors, targets = check_links(root, rules)
    errors = include_errors + link_errors + check_cycles(edges)
    for error in errors:
        print(f"layers: {error}", file=sys.stderr)
    if errors:
        print(f"layers: {len(errors)} violation(s) of the layering in docs/architecture.md", file=sys.stderr)
        return 1
    areas = len({a for a, _ in edges} | {b for _, b in edges})
    print(f"layers: ok ({len(rules)} folders, {areas} areas, {len(edges)} area links, no cycle; {targets} CMake targets)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
