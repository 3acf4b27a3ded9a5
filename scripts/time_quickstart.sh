#!/usr/bin/env bash
# Times the README's Quickstart as a new user runs it, with PyTorch's CPU wheel index unreachable
# (docs/install.md §3). Each command line of the Quickstart block runs in order in a fresh copy of the
# checkout and a fresh venv, the index URL replaced by an address that refuses connections; `python -m
# pytest` (the whole suite) is not timed. Baseline, same run: the former one-line install
# `pip install -e ".[dev]" --extra-index-url <index>` in another fresh venv, against the same address.
# First, the CPU torch line alone where that index is the only source (this machine's pip configuration
# and find-links switched off), with the Quickstart's `--retries 0 --timeout 5` and with pip's defaults.
# Usage: scripts/time_quickstart.sh [--torch-line-only] [UNREACHABLE_URL]  (default http://127.0.0.1:9/)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
ONLY_TORCH=0
[[ "${1:-}" == "--torch-line-only" ]] && { ONLY_TORCH=1; shift; }
UNREACHABLE="${1:-http://127.0.0.1:9/}"
CPU_INDEX="https://download.pytorch.org/whl/cpu"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

copy_checkout() {  # tracked and untracked-but-not-ignored files: the working tree as a clone has it
  mkdir -p "$1"
  (cd "$ROOT" && git ls-files -z -co --exclude-standard | xargs -0 tar -cf - 2>/dev/null) | tar -xf - -C "$1"
}

# the Quickstart block: the first ```bash block after "## Quickstart", continuation lines joined
mapfile -t LINES < <(python3 - "$ROOT/README.md" <<'EOF'
import re, sys
text = open(sys.argv[1], encoding="utf-8").read()
block = re.search(r"^## Quickstart\n.*?^```bash\n(.*?)^```", text, flags=re.DOTALL | re.MULTILINE).group(1)
pending = ""
for line in block.splitlines():
    if line.rstrip().endswith("\\"):
        pending += line.rstrip()[:-1] + " "
        continue
    line, pending = (pending + line).strip(), ""
    if line and not line.startswith("#"):
        print(line)
EOF
)

now() { date +%s.%N; }
elapsed() { python3 -c "print(f'{$2 - $1:.1f}')"; }

for flags in "--retries 0 --timeout 5" ""; do
  start=$(now)
  set +e
  env -u PIP_FIND_LINKS -u PIP_DEFAULT_TIMEOUT -u PIP_RETRIES -u PIP_TIMEOUT PIP_CONFIG_FILE=/dev/null \
    python3 -m pip download --no-deps $flags --index-url "$UNREACHABLE" "torch>=2.4,<2.14" -d "$WORK/dl" \
    >"$WORK/torch.log" 2>&1
  code=$?
  set -e
  echo "torch line alone, index $UNREACHABLE only, flags [${flags:-pip defaults}]: $(elapsed "$start" "$(now)") s," \
       "exit $code, $(grep -c Retrying "$WORK/torch.log" || true) retries"
done
[[ $ONLY_TORCH == 1 ]] && exit 0

copy_checkout "$WORK/quick"
cd "$WORK/quick"
echo "Quickstart with $CPU_INDEX replaced by $UNREACHABLE (python: $(python3 --version 2>&1))"
total=0
install=0  # the torch line and the dev install: what the baseline's single line does
for line in "${LINES[@]}"; do
  if [[ "$line" == "python -m pytest"* ]]; then
    printf '%8s  %-4s %s\n' "-" "-" "$line  (the test suite: not timed)"
    continue
  fi
  run="${line//$CPU_INDEX/$UNREACHABLE}"
  [[ "$line" == ". .venv/bin/activate" ]] && { . .venv/bin/activate; printf '%8s  %-4s %s\n' 0.0 0 "$line"; continue; }
  start=$(now)
  set +e
  bash -c "$run" >"$WORK/step.log" 2>&1
  code=$?
  set -e
  took=$(elapsed "$start" "$(now)")
  total=$(python3 -c "print(f'{$total + $took:.1f}')")
  if [[ "$line" == *"$CPU_INDEX"* || "$line" == *".[dev]"* ]]; then
    install=$(python3 -c "print(f'{$install + $took:.1f}')")
  fi
  printf '%8s  %-4s %s\n' "$took" "$code" "$run"
  if [[ $code -ne 0 && "$line" != *"$CPU_INDEX"* ]]; then
    echo "FAILED: $run"; tail -20 "$WORK/step.log"; exit 1
  fi
done
deactivate
echo "quickstart total: ${total} s, of which the torch and dev installs ${install} s (a failed line is the CPU index one; the next line goes on)"

# baseline: the former single install line, against the same unreachable address
copy_checkout "$WORK/before"
cd "$WORK/before"
python3 -m venv .venv
. .venv/bin/activate
pip install -q -e . >/dev/null 2>&1
start=$(now)
set +e
pip install -e ".[dev]" --extra-index-url "$UNREACHABLE" >"$WORK/before.log" 2>&1
code=$?
set -e
before=$(elapsed "$start" "$(now)")
retries=$(grep -c "Retrying" "$WORK/before.log" || true)
deactivate
echo "baseline: pip install -e \".[dev]\" --extra-index-url $UNREACHABLE: ${before} s (exit $code, $retries retry warnings)"
echo "dev install, Quickstart lines / baseline line: ${install} s / ${before} s = $(python3 -c "print(f'{$install / $before:.2f}')")"
