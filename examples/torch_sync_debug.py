"""Records what torch.cuda.set_sync_debug_mode("warn") reports, for the
side-by-side table of examples/compare_sync_reports.py: each warning with the
file:line torch's warning names and the innermost frame of the calling script
at that moment (torch attributes a warning to the innermost Python frame,
often inside torch; the script's own frame is what a user would fix).
Warnings raised on autograd's threads are replayed by torch at the end of
backward(), so they land on the backward() call."""
import contextlib
import json
import os
import traceback
import warnings

import torch


@contextlib.contextmanager
def record_torch_sync_warnings(path, script):
    script = os.path.abspath(script)
    records = []
    previous = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        if "synchroniz" not in str(message):
            return previous(message, category, filename, lineno, file, line)
        user = [f for f in traceback.extract_stack() if os.path.abspath(f.filename) == script]
        records.append({"torch_file": filename, "torch_line": lineno,
                        "user_line": user[-1].lineno if user else 0, "message": str(message)[:120]})

    warnings.showwarning = show
    warnings.simplefilter("always")
    torch.cuda.set_sync_debug_mode("warn")
    try:
        yield records
    finally:
        torch.cuda.set_sync_debug_mode(0)
        warnings.showwarning = previous
        with open(path, "w") as f:
            json.dump(records, f, indent=1)
