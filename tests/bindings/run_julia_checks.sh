#!/bin/bash
# Static checks of bindings/julia with tree-sitter-julia (no Julia needed).
#   run_julia_checks.sh SOURCE_ROOT syntax|ccalls|api|bad-syntax|bad-ccalls|bad-api
#   run_julia_checks.sh SOURCE_ROOT bad-constants FILE   (FILE from bad_constants.sh)
set -eu
src=$1
tools=$src/bindings/julia/tools
command -v node >/dev/null || { echo "node not found: skipped"; exit 77; }
# The checks run in parallel: one installs the npm packages while the others
# wait on the lock; the marker says the install finished.
install() {
    [ -f "$tools/node_modules/.installed" ] && return 0
    (cd "$tools" && npm ci --no-audit --no-fund --ignore-scripts >/dev/null 2>&1) &&
        touch "$tools/node_modules/.installed"
}
if command -v flock >/dev/null; then
    (flock 9 && install) 9>"$tools/.npm-install.lock"
else
    install
fi || { echo "npm ci failed in bindings/julia/tools: skipped"; exit 77; }
jl=$src/bindings/julia
fixtures=$src/tests/bindings/fixtures
case $2 in
    syntax) exec node "$tools/check_syntax.js" "$jl"/src/*.jl "$jl"/ext/*.jl "$jl"/test/*.jl ;;
    ccalls) exec node "$tools/check_ccalls.js" --header "$src/include/snn.h" --complete --constants \
        "$jl"/src/*.jl "$jl"/ext/*.jl ;;
    api) exec node "$tools/check_api.js" --tests "$jl/test/runtests.jl" --clashes "$tools/clashing_names.txt" \
        "$jl"/src/*.jl "$jl"/ext/*.jl ;;
    bad-syntax) exec node "$tools/check_syntax.js" "$fixtures/bad_syntax.jl" ;;
    bad-ccalls) exec node "$tools/check_ccalls.js" --header "$src/include/snn.h" "$fixtures/bad_ccall.jl" ;;
    bad-constants) exec node "$tools/check_ccalls.js" --header "$src/include/snn.h" --constants "${3:?bad-constants needs the file to check}" ;;
    bad-api) exec node "$tools/check_api.js" --tests "$fixtures/julia_api/test/runtests.jl" \
        --clashes "$tools/clashing_names.txt" "$fixtures/julia_api/src/Mini.jl" ;;
esac
echo "unknown check $2"; exit 2
