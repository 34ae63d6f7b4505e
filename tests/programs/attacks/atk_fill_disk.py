"""Attack: fill /tmp, /dev/shm, the working folder and any writable cache (bounded: 32 MB each),
leaving the files behind, then answer wrongly."""
import os

import torch
import torch.nn as nn

CHUNK = b"\xab" * (1 << 20)
for folder in ("/tmp", "/dev/shm", "/var/tmp", os.getcwd(), os.path.expanduser("~")):
    try:
        with open(os.path.join(folder, "stitch-attack-fill.bin"), "wb") as fh:
            for _ in range(32):
                fh.write(CHUNK)
    except OSError:
        pass


class ModelNew(nn.Module):
    def forward(self, x):
        return x * 0.5 + 1.0
