#!/bin/bash
# Everything a GPU machine is needed for, in one go (about 15 minutes), results under $OUT:
#
#   bash benchmarks/gpu_session.sh WHEELS_DIR [OUT]
#
# WHEELS_DIR holds the wheels the machine lacks (array-api-compat, array-api-strict); OUT
# defaults to ./gpu-results. Stages, each time-limited so that one hang cannot eat the rest:
#   1. the self-check on every GPU backend, full shapes (check.md, check.json)
#   2. the test suite with cupy, torch-cuda and JAX on its default device, concurrently
#   3. the benchmark on the tall, batched, wide, ridge-path and eager cases (bench.md, bench.json)
set -o pipefail
WHEELS=${1:?wheels folder}; OUT=${2:-${OUT:-gpu-results}}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site "$WHEELS"/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nproc
  python3 -c "import sys, numpy, cupy, jax, torch, array_api_compat as a; print(sys.version.split()[0], 'numpy', numpy.__version__, 'cupy', cupy.__version__, 'jax', jax.__version__, jax.devices(), 'torch', torch.__version__, torch.version.cuda, 'array-api-compat', a.__version__)"
} > "$OUT/env.txt" 2>&1
timeout 300 python3 -m lsq_backends.check --backends cupy,torch-cuda,jax-gpu --repeat 5 --json "$OUT/check.json" > "$OUT/check.md" 2>&1
PYT="python3 -m pytest -q -p no:cacheprovider --tb=short -rfE --durations=10"
( LSQ_BACKENDS=cupy timeout 420 $PYT -n 4 > "$OUT/tests_cupy.log" 2>&1 ) &
( LSQ_BACKENDS=torch-cuda timeout 420 $PYT -n 4 > "$OUT/tests_torch_cuda.log" 2>&1 ) &
( LSQ_BACKENDS=jax timeout 420 $PYT -n 6 > "$OUT/tests_jax.log" 2>&1 ) &
wait
timeout 300 python3 -m benchmarks --backends cupy,torch,jax --dtype float64,float32 --repeat 5 --no-memory \
  --cases tall_200000x50,tall_100000x200,batched_10000x64x8,wide_200x5000,ridgepath_20000x200x50,eager_2000x20 \
  --json "$OUT/bench.json" > "$OUT/bench.md" 2>&1
cat "$OUT/env.txt"; tail -1 "$OUT/check.md"; for f in "$OUT"/tests_*.log; do echo "$f: $(tail -1 "$f")"; done
