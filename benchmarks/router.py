"""Plot a checkpoint's router weights per device (averaged over the held-out tasks).

    python benchmarks/router.py --checkpoint CKPT [--out docs/img/router_CKPT.png]
        [--json benchmarks/results/router_CKPT.json]

The data issue asks whether experts trained on several physical machines make the router mix
differently per machine; this draws that for any experts checkpoint, bundled or not, and writes the
weights the plot shows to a result file.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from common import RESULTS, ROOT, command_line, provenance
from report import router_gates, router_plot


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", required=True, help="an experts checkpoint folder (with a router)")
    parser.add_argument("--out", help="PNG path (default: docs/img/router_<checkpoint folder name>.png)")
    parser.add_argument("--json", help="the weights (default: benchmarks/results/router_<checkpoint folder name>.json)")
    args = parser.parse_args()
    checkpoint = Path(args.checkpoint)
    out = Path(args.out) if args.out else ROOT / "docs" / "img" / f"router_{checkpoint.name}.png"
    found = router_gates(checkpoint)
    if found is None:
        raise SystemExit(f"{checkpoint} has no router (a base checkpoint, or uniform gates): nothing to plot")
    meta = provenance(command_line())
    router_plot(out.parent, f"{meta['date'][:10]} | {meta['commit']}", checkpoint, out.name, found)
    devices, experts, gates = found
    rows = {device: dict(zip(experts, map(float, row))) for device, row in zip(devices, gates)}
    result = Path(args.json) if args.json else RESULTS / f"router_{checkpoint.name}.json"
    result.write_text(json.dumps(meta | {"checkpoint": str(checkpoint), "gates": rows}, indent=1), encoding="utf-8")
    print(out, result)


if __name__ == "__main__":
    main()
