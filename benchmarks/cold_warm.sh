#!/bin/bash
# Each pipeline named, cold then warm, from its own empty data/ (docs/benchmarks.md "Pipelines, cold and warm").
#
#   git clone <repo> fresh && cd fresh && make setup
#   LOGS=/tmp/times benchmarks/cold_warm.sh emu fmda tatoeba qe sts
#   .venv/bin/python benchmarks/pipeline_times.py /tmp/times emu fmda tatoeba qe sts
#
# data/ becomes a link to data_runs/<pipeline> (a copy of the checkout's data/ as cloned), so each
# cold run starts with nothing encoded, converted or trained, and its warm run reuses only what the
# cold one made; mlruns/ is shared. Run it in a clone you do not work in: it replaces data/.
set -u
export KEDRO_DISABLE_TELEMETRY=true
LOGS=${LOGS:?set LOGS to the directory for the logs}
mkdir -p "$LOGS"
[ -d .data_template ] || { [ -d data ] && [ ! -L data ] && cp -a data .data_template; }
[ -d .data_template ] || { echo "cold_warm.sh: no data/ as cloned to copy (run it from the project root of a clone)"; exit 2; }
for P in "$@"; do
  # data/ as cloned is a directory (its copy is the template): `rm -f` alone cannot remove it, and
  # the link would then land inside it, so every pipeline would share one data/
  if [ -L data ]; then rm data; elif [ -d data ]; then rm -rf data; fi
  [ -e "data_runs/$P" ] && mv "data_runs/$P" "data_runs/$P.old.$(date +%s)"
  mkdir -p data_runs && cp -a .data_template "data_runs/$P" && ln -s "data_runs/$P" data
  for RUN in cold warm; do
    echo "$P $RUN start $(date -u +%FT%TZ)" >> "$LOGS/chain.txt"
    /usr/bin/time -v .venv/bin/kedro run --pipelines="$P" > "$LOGS/${P}_${RUN}.log" 2>&1
    echo "$P $RUN rc=$? end $(date -u +%FT%TZ)" >> "$LOGS/chain.txt"
  done
done
