"""Search everywhere: the full-text index over tasks, answers, evidence, issues and notes."""
