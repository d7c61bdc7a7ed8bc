#!/bin/bash
# A baseline saved beside two bursty neighbours (benchmarks/neighbour.py), then a real commit that
# makes the GEMM x4.5 (the demo's gemm-layout change, committed as the default of
# example_suite/demo_changes.py), compared on a quiet host with paired confirmation (the default).
# Two trials in a fresh clone of this repository and venv; prints how many baseline tests were
# measured on a host slowed x3 or more, the decisions, and every non-ship or disturbed-baseline
# test with its reasons. Usage: bash benchmarks/disturbed_baseline.sh [scratch-dir]
set -u
d=${1:-/tmp/disturbed-baseline}
rm -rf "$d"; git clone -q "$(git -C "$(dirname "$0")" rev-parse --show-toplevel)" "$d" && cd "$d" || exit 2
python3.11 -m venv .venv && . .venv/bin/activate && pip install -q -U pip >/dev/null 2>&1 && pip install -q -e '.[examples]' >/dev/null 2>&1
echo "commit $(git log --oneline -1)"
for trial in 1 2; do
  rm -rf example_suite/.roofline; git checkout -q main 2>/dev/null || git checkout -q master; git reset -q --hard origin/HEAD
  python benchmarks/neighbour.py --seed $trial & N1=$!
  python benchmarks/neighbour.py --seed $((trial+10)) & N2=$!
  sleep 2
  echo "=== trial $trial save beside two neighbours $(date -u +%H:%M:%S)"
  python -m pytest example_suite --roofline --roofline-save=main --roofline-json=save.json -p no:randomly 2>&1 | tail -2
  kill $N1 $N2; wait $N1 $N2 2>/dev/null; sleep 5
  python - <<'PY'
from pytest_roofline.store import Store
from pytest_roofline.gate.run import baseline_entries
import glob
store = Store.open(glob.glob("example_suite/.roofline/store.sqlite")[0], create=False)
entries = baseline_entries(store.load_baseline("main"))
bad = {n: e.host_disturbed for n, e in entries.items() if e.host_disturbed}
print(f"baseline: {len(bad)} of {len(entries)} tests measured on a host slowed x3 or more")
for n, r in bad.items(): print("  ", n, "|", r[:160])
PY
  sed -i 's/    names = {name.strip() for name in os.environ.get(ENV, "").split(",")}/    names = {name.strip() for name in os.environ.get(ENV, "gemm-layout").split(",")}/' example_suite/demo_changes.py
  git -c user.name=t -c user.email=t@e commit -q -am "GEMM: column by column (x4.5)"
  echo "=== trial $trial compare on a quiet host $(date -u +%H:%M:%S)"
  s=$(date +%s); python -m pytest example_suite --roofline --roofline-baseline=main --roofline-json=cmp.json -p no:randomly 2>&1 | grep -E "^roofline: (confirming|measuring)|passed|failed" ; echo "compare $(( $(date +%s)-s )) s"
  python - <<'PY'
import json, collections
d = json.load(open("cmp.json"))
c = collections.Counter((("gemm" if "test_gemm" in t["nodeid"] else "other"), t["decision"]) for t in d["tests"])
print(dict(c))
for t in d["tests"]:
    r = " || ".join(t["reasons"])
    tag = "DISTURBED-BASE " if "disturbed host" in r or "while the host was disturbed" in r else ""
    if t["decision"] != "ship" or tag:
        print(tag + t["nodeid"], t["decision"], "|", r[:700])
PY
done
