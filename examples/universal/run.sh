#!/bin/sh
# A RASP program in a fixed universal transformer, in three commands: compile the program
# to weights, build the universal machine of their shape, then embed them (E) and check
# the machine on every input of the domain against the weights and the interpreter.
# Run from the repository root; writes shift.npz and ut.npz into FOLDER (default: here).
#   sh examples/universal/run.sh [FOLDER]
set -e
out="${1:-.}"
rasp-sim compile "$(dirname "$0")/shift.rasp" --name shifted --vocab a,b,c --max-len 5 -o "$out/shift.npz"
rasp-sim universal build --like "$out/shift.npz" -o "$out/ut.npz"
rasp-sim universal verify "$out/shift.npz" --ut "$out/ut.npz" --program "$(dirname "$0")/shift.rasp" --name shifted
