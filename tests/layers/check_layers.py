#!/usr/bin/env python3
"""Checks that no source of the library includes a layer above its own.

The layers, what each may use, and which layer each public header belongs
to are read from docs/ARCHITECTURE.md (the tables under "## Layers"); the
same dependencies are read from CMakeLists.txt (TSL_DEPS_<layer>, which the
build links and enforces), and the two must agree. Then every #include "..."
of src/<layer>/** and include/tensile/*.h is checked:

  - "<other layer>/...h"   the other layer must be the file's own or one it may use;
  - "tensile/<h>.h"        the header's layer likewise; the umbrella header
                           tensile/sched.h is for programs, never for src/;
  - "<name>.h"             a header of the same folder: fine.

Usage: check_layers.py ROOT    exit 0 if clean, 1 with one line per
violation (file:line, the include, the two layers), 2 if ROOT's docs or
CMakeLists cannot be read.
"""
import os
import re
import sys


def fail_usage(msg):
    print("check_layers: " + msg, file=sys.stderr)
    sys.exit(2)


def read_tables(root):
    """(deps, headers) from docs/ARCHITECTURE.md's "## Layers" section."""
    path = os.path.join(root, "docs", "ARCHITECTURE.md")
    try:
        text = open(path, encoding="utf-8").read()
    except OSError as e:
        fail_usage("cannot read %s: %s" % (path, e))
    m = re.search(r"^## Layers\n(.*?)(?=^## )", text, re.S | re.M)
    if not m:
        fail_usage("%s has no '## Layers' section" % path)
    deps, headers = {}, {}
    for line in m.group(1).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("|") or len(cells) < 2 or set(cells[0]) <= set("-: "):
            continue
        name = cells[0].strip("`")
        if name in ("layer", "header"):
            continue  # a table's heading
        if re.fullmatch(r"[a-z]+", name) and len(cells) >= 3:
            uses = cells[1]
            deps[name] = set() if uses in ("", "-", "nothing") else \
                {u.strip().strip("`") for u in uses.split(",")}
        elif name.startswith("tensile/"):
            headers[name] = cells[1].strip("`")
    if not deps:
        fail_usage("%s: no layer rows found under '## Layers'" % path)
    return deps, headers


def read_cmake_deps(root):
    path = os.path.join(root, "CMakeLists.txt")
    try:
        text = open(path, encoding="utf-8").read()
    except OSError as e:
        fail_usage("cannot read %s: %s" % (path, e))
    out = {}
    for m in re.finditer(r"^set\(TSL_DEPS_([a-z]+)\s+([^)]*)\)", text, re.M):
        out[m.group(1)] = {d for d in m.group(2).replace('"', " ").split() if d}
    return out


INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def check(root):
    deps, headers = read_tables(root)
    problems = []
    cm = read_cmake_deps(root)
    if cm != deps:
        for layer in sorted(set(cm) | set(deps)):
            if cm.get(layer) != deps.get(layer):
                problems.append("docs/ARCHITECTURE.md says layer '%s' may use %s; CMakeLists.txt "
                                "TSL_DEPS_%s says %s" % (layer, sorted(deps.get(layer, [])), layer,
                                                         sorted(cm.get(layer, []))))
    for layer, uses in deps.items():
        for u in uses:
            if u not in deps:
                problems.append("layer '%s' may use '%s', which is not a layer" % (layer, u))

    def allowed(src_layer, dst_layer):
        return dst_layer == src_layer or dst_layer in deps.get(src_layer, set())

    files = []
    src = os.path.join(root, "src")
    for layer in sorted(os.listdir(src)):
        if not os.path.isdir(os.path.join(src, layer)):
            continue
        if layer not in deps:
            problems.append("src/%s/ is not a layer of docs/ARCHITECTURE.md" % layer)
            continue
        for dp, _, fs in os.walk(os.path.join(src, layer)):
            files += [(os.path.join(dp, f), layer) for f in sorted(fs)
                      if f.endswith((".c", ".h", ".inc"))]
    inc = os.path.join(root, "include", "tensile")
    for f in sorted(os.listdir(inc)):
        name = "tensile/" + f
        if name not in headers:
            problems.append("include/%s has no layer in docs/ARCHITECTURE.md" % name)
        elif headers[name] != "umbrella" and headers[name] not in deps:
            problems.append("include/%s: layer '%s' is not a layer" % (name, headers[name]))
        else:
            files.append((os.path.join(inc, f), headers[name]))

    for path, layer in files:
        rel = os.path.relpath(path, root)
        text = open(path, encoding="utf-8", errors="replace").read()
        for m in INCLUDE.finditer(text):
            target = m.group(1)
            line = text.count("\n", 0, m.start()) + 1
            if target.startswith("tensile/"):
                dst = headers.get(target)
                if dst is None:
                    problems.append("%s:%d: includes %s, which is no public header" % (rel, line, target))
                    continue
                if dst == "umbrella":
                    if layer != "umbrella":
                        problems.append("%s:%d: includes the umbrella %s; include the component "
                                        "headers it needs" % (rel, line, target))
                    continue
            elif "/" in target:
                dst = target.split("/")[0]
                if dst not in deps:
                    problems.append("%s:%d: includes %s, which is in no layer" % (rel, line, target))
                    continue
                if rel.startswith("include/"):
                    problems.append("%s:%d: a public header includes the internal %s" %
                                    (rel, line, target))
                    continue
            else:
                continue  # a header of the same folder
            if layer == "umbrella":
                continue
            if not allowed(layer, dst):
                problems.append("%s:%d: includes %s: layer '%s' may not use layer '%s' (it may use: "
                                "%s)" % (rel, line, target, layer, dst,
                                         ", ".join(sorted(deps[layer])) or "nothing"))
    return problems


def main():
    if len(sys.argv) != 2:
        fail_usage("usage: check_layers.py ROOT")
    problems = check(sys.argv[1])
    for p in problems:
        print(p)
    if problems:
        print("check_layers: %d violation(s)" % len(problems))
        return 1
    print("check_layers: every include follows the layers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
