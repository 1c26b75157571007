"""Plot a checkpoint's router weights per device (averaged over the held-out tasks).

    python benchmarks/router.py --checkpoint CKPT [--out docs/img/router_CKPT.png]

The data issue asks whether experts trained on several physical machines make the router mix
differently per machine; this draws that for any experts checkpoint, bundled or not.
"""

from __future__ import annotations

import argparse
import datetime
import subprocess
from pathlib import Path

from common import ROOT
from report import router_plot


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", required=True, help="an experts checkpoint folder (with a router)")
    parser.add_argument("--out", help="PNG path (default: docs/img/router_<checkpoint folder name>.png)")
    args = parser.parse_args()
    checkpoint = Path(args.checkpoint)
    out = Path(args.out) if args.out else ROOT / "docs" / "img" / f"router_{checkpoint.name}.png"
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout
    stamp = f"{datetime.date.today().isoformat()} | {commit.strip()}"
    if router_plot(out.parent, stamp, checkpoint, out.name) is None:
        raise SystemExit(f"{checkpoint} has no router (a base checkpoint, or uniform gates): nothing to plot")
    print(out)


if __name__ == "__main__":
    main()
