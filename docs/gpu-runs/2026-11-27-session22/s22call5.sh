. .gpu/setup.sh > /dev/null 2>&1
uptime
python3 .gpu/s22pin.py unpinned
taskset -c 3 python3 .gpu/s22pin.py one-core
taskset -c 3 python3 .gpu/s22pin.py one-core-again
python3 .gpu/s22pin.py unpinned-again
(taskset -c 3 python3 -c "import time; [time.sleep(0.0001) for _ in range(10**6)]" &) ; sleep 0.5
taskset -c 3 python3 .gpu/s22pin.py one-core-beside-a-waker
