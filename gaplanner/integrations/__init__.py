"""gaplanner inside other tools (ExecuTorch)."""
