#!/usr/bin/env python3
"""spark-matrix-features.py LOG...: a feature x version table from the
conformance tables in test-spark-line logs (out/spark-matrix/V.log), each
cell the feature's cases summed over the flavours as
agree/disagree/skipped (+N known). Used by scripts/spark-matrix.sh."""
import os
import re
import sys

CELL = re.compile(r"^(\d+)/(\d+)/(\d+)(?: \+(\d+))?$")


def table(path):
    """{feature: [agree, disagree, skipped, known]} of one log's table."""
    out, order, inside = {}, [], False
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            body = line.strip()
            if body.startswith("feature") and "dropDuplicates" in body:
                inside = True
                continue
            if not inside:
                continue
            if not body:
                break
            cols = re.split(r"\s{2,}", body)
            name, cells = cols[0], cols[1:]
            tot = [0, 0, 0, 0]
            for c in cells:
                m = CELL.match(c)
                if m:
                    for i in range(4):
                        tot[i] += int(m.group(i + 1) or 0)
            out[name] = tot
            order.append(name)
    return out, order


def main(paths):
    versions, tables, order = [], [], []
    for p in paths:
        t, o = table(p)
        if not t:
            continue
        versions.append(os.path.basename(p)[: -len(".log")] if p.endswith(".log") else p)
        tables.append(t)
        for f in o:
            if f not in order:
                order.append(f)
    if not tables:
        return
    w = max(len(f) for f in order) + 2
    print("feature".ljust(w) + "".join(v.ljust(16) for v in versions))
    for f in order:
        row = f.ljust(w)
        for t in tables:
            c = t.get(f)
            s = "-" if c is None else f"{c[0]}/{c[1]}/{c[2]}" + (f" +{c[3]}" if c[3] else "")
            row += s.ljust(16)
        print(row.rstrip())


if __name__ == "__main__":
    main(sys.argv[1:])
