# Shared by the CLI test scripts: where ../shared is, a pass/fail counter, a scratch directory.
# Sourced after `bin=$1`; each script ends with its own tally.
shared=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)/shared
fails=0 passes=0
check() {  # check NAME CONDITION-COMMAND...
  local name=$1; shift
  if "$@"; then passes=$((passes + 1)); else echo "FAIL: $name"; fails=$((fails + 1)); fi
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
