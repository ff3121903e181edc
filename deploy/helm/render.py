#!/usr/bin/env python3
"""Render or lint the mcp-gateway chart with a real Helm (v4, as a library: PyPI helm-python-sdk).

  render.py render CHART [VALUES.yaml]   manifests as `helm template` prints them
  render.py lint CHART [VALUES.yaml]     lint findings; exit 1 on errors

Release name `mcp-gateway`, namespace `default`. Used by gateway/tests/it/helm.rs; scripts/setup-peers
installs the SDK into .venv-helm.
"""
import sys

import helm_python as helm


def values(path):
    if not path:
        return None
    with open(path, encoding="utf-8") as f:
        return helm.values_from_yaml(f.read())


def main(argv):
    helm.disable_logging()
    if len(argv) < 3 or argv[1] not in ("render", "lint"):
        print(__doc__, file=sys.stderr)
        return 2
    chart_dir, vals = argv[2], values(argv[3] if len(argv) > 3 else None)
    if argv[1] == "lint":
        report = helm.lint(chart_dir, vals, strict=True, namespace="default")
        bad = [m for m in report["messages"] if m["severity"] >= 2] + [
            {"severity": 3, "path": "", "error": e} for e in report["errors"]
        ]
        for m in report["messages"]:
            print(f"[{m['severity']}] {m['path']}: {m['error']}")
        return 1 if bad else 0
    try:
        manifests = helm.Chart.load(chart_dir).render(vals, name="mcp-gateway", namespace="default")
    except helm.HelmError as e:
        print(e, file=sys.stderr)
        return 1
    out = []
    for path in sorted(manifests):
        text = manifests[path].strip("\n")
        if not text.strip() or path.endswith("NOTES.txt"):
            continue
        out.append(f"---\n# Source: {path}\n{text}\n")
    sys.stdout.write("".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
