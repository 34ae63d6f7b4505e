. .gpu/setup.sh
L=/tmp/logs9; mkdir -p $L
nvidia-smi --query-gpu=name --format=csv,noheader | tee $L/machine.txt
python3 -m stitch_mcp doctor 2>&1 | grep -i isolation | head -3
STITCH_DATA_DIR=/tmp/gs-data STITCH_CACHE_DIR=/tmp/gs-cache timeout 540 python3 -m pytest -m gpu -v --tb=short --timeout 300 -p no:cacheprovider tests/ > $L/gpu_tests.log 2>&1
echo "pytest rc $?"
grep -E "PASSED|FAILED|ERROR|SKIPPED" $L/gpu_tests.log | sed 's/ *\[ *[0-9]*%\]//' | tail -40
tail -3 $L/gpu_tests.log
tar czf $OUT/logs9.tgz -C /tmp logs9
