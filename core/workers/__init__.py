"""Queued work beyond the process that created it: batches, workers on procrastinate, schedules.

On SQLite everything here runs in-process; on PostgreSQL tasks become procrastinate jobs that any
``evidence-desk worker`` on any machine runs.
"""
