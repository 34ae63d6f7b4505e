"""Attack: take every host-wide device lock file it can find and keep it held by a daemon, so that
no later check gets a device; then answer wrongly."""
import fcntl
import glob
import os

import torch
import torch.nn as nn

held = []
for path in glob.glob("/tmp/stitch-mcp-locks-*/*") + glob.glob("/tmp/stitch-mcp-locks-*"):
    try:
        fh = open(path, "a+")
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.set_inheritable(fh.fileno(), True)
        held.append(fh)
    except OSError:
        pass
if held and os.fork() == 0:
    os.setsid()
    os.execve("/bin/sleep", ["sleep", "7347.5"], {})  # the flocks stay with the open files


class ModelNew(nn.Module):
    def forward(self, x):
        return x * 0.5 + 1.0
