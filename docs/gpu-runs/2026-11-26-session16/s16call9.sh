. .gpu/setup.sh
export STITCH_DATA_DIR=/tmp/t9-data STITCH_CACHE_DIR=/tmp/t9-cache
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 250 python3 -m pytest -m gpu -v -s --tb=short --timeout 240 -p no:cacheprovider tests/test_check_gpu.py -k "honest_cuda or already_built or cuda_oom" 2>&1 | grep -E "PASSED|FAILED|ERROR|^E |warm check|passed|failed" | cut -c1-300
