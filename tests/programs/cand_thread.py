import threading
import time

import torch
import torch.nn as nn


def _busy():
    while True:
        time.sleep(0.01)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.started = False

    def forward(self, x):
        if not self.started:
            self.started = True
            threading.Thread(target=_busy, name="hidden-work", daemon=True).start()
        return torch.relu(x)
