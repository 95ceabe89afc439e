"""Exports that leave the workspace from the desk or the command line: decisions, multi-task reports,
bundles of a selection; each reports progress, honours cancellation and never leaves half a file."""
