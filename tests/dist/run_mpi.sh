#!/bin/sh
# Runs one scenario of test_dist under mpirun with 2 ranks on this machine.
#
#   run_mpi.sh MPIRUN TEST_DIST SCENARIO
#
# equivalence and broadcast pass when every rank exits 0 (mpirun's own status).
# rank-dies and killed-while-saving lose a rank on purpose: Open MPI's mpirun
# would kill the survivor as soon as one rank exits with an error, so they run
# with orte_abort_on_non_zero_status 0, and pass when the surviving rank 0 has
# written "ok" into the result file. Skipped (77) without mpirun.
set -u
mpirun=$1
exe=$2
scenario=$3
command -v "$mpirun" > /dev/null 2>&1 || { echo "no mpirun: skipped"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# Open MPI refuses to run as root without this; no effect otherwise.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
launch="$mpirun -np 2 --oversubscribe"

case $scenario in
    equivalence|broadcast)
        $launch "$exe" "$scenario" "$dir"
        ;;
    rank-dies|killed-while-saving)
        $launch --mca orte_abort_on_non_zero_status 0 "$exe" "$scenario" "$dir"
        if [ "$(cat "$dir/result" 2> /dev/null)" = ok ]; then
            echo "$scenario: ok (the surviving rank saw the failure in time)"
        else
            echo "FAIL: $scenario: rank 0 did not report success"
            exit 1
        fi
        ;;
    *)
        echo "unknown scenario $scenario"
        exit 2
        ;;
esac
