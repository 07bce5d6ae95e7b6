"""Result files, as bench/results.h writes and reads them: a bench's figures as "key value"
lines, kept with --save and read back with --previous, so a later run prints each figure beside
the one before it."""
import math
import sys


def read_results(path):
    """The figures of a saved file; empty (with a note) where there is none."""
    if not path:
        return {}
    try:
        with open(path) as f:
            lines = [line.split() for line in f]
    except OSError:
        print(f"note: no previous results at {path}", file=sys.stderr)
        return {}
    results = {}
    for p in lines:
        try:
            if len(p) == 2 and math.isfinite(float(p[1])):
                results[p[0]] = float(p[1])
        except ValueError:  # a line results.h would skip too
            pass
    return results


def save_results(path, results):
    if path:
        with open(path, "w") as f:
            for key in sorted(results):
                if math.isfinite(results[key]):
                    f.write(f"{key} {results[key]:.10g}\n")


def previous(before, key, now, decimals=1):
    """ " (previous 8936.0, +0.8%)" for `key`, or "" where the earlier run lacks it."""
    if key not in before:
        return ""
    was = before[key]
    change = f"{100 * (now / was - 1):+.1f}%" if was else "n/a"
    return f" (previous {was:.{decimals}f}, {change})"
