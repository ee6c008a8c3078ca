#!/bin/bash
# Runs a checker on a deliberately wrong fixture and passes only when the
# checker fails the way it should: exit status 1 and every expected problem
# reported (so a crash or a missing tool cannot pass for a detection).
#   expect_failure.sh 'pattern|pattern|...' command [args...]
set -u
patterns=$1
shift
output=$("$@" 2>&1)
status=$?
echo "$output"
if [ "$status" -eq 77 ]; then exit 77; fi
if [ "$status" -ne 1 ]; then
    echo "expected the checker to exit with 1 (problems found), got $status"
    exit 1
fi
IFS='|' read -r -a expected <<< "$patterns"
for p in "${expected[@]}"; do
    if ! grep -qF -- "$p" <<< "$output"; then
        echo "the checker did not report: $p"
        exit 1
    fi
done
echo "the checker found all ${#expected[@]} deliberate problems"
