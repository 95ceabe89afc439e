"""A run job whose retry the lost database did not record is closed by its own worker.

Seen once in a fresh-clone run of tests/team/test_reconnect.py (``restart``): a restart ended a
task's run, procrastinate's write of the job's retry met the same restart, and the job stayed
``doing`` under a worker that rode the restart out, holding its task's lock for ever. The race is
rare; here its outcome is set up on a real server (a job fetched, so ``doing``, its body ended by
a lost database) and ``close_unrecorded_ends`` is asked to mend it: the job is closed, freeing the
lock, and its task stays cut off, for ``release_cut_off`` to resume and queue once.
"""

from __future__ import annotations

import uuid

import pytest

from core.store import Store
from core.tasks import dispatch
from core.workers.worker import WorkerStats, close_unrecorded_ends


@pytest.mark.asyncio
async def test_a_job_left_doing_by_a_lost_retry_is_closed_and_one_running_here_is_not(pg_url: str) -> None:
    store = await Store.open(pg_url)
    try:
        await dispatch.ensure_queue_schema(store)
        cut, busy = uuid.uuid4().hex, uuid.uuid4().hex
        assert await dispatch.defer_tasks(store, [cut, busy]) == 2
        app = dispatch.make_app(store.url, min_size=1, max_size=2)
        async with app.open_async():
            worker = await app.job_manager.register_worker()
            fetched = [await app.job_manager.fetch_job([dispatch.QUEUE], worker) for _ in range(2)]
            jobs = {job.lock: job for job in fetched if job is not None}
            stats = WorkerStats()
            for task_id in (cut, busy):
                job = jobs[task_id]
                assert job.id is not None and job.status == "doing"
                stats.unrecorded[job.id] = (task_id, job.attempts)  # as run_task notes a cut-off body
                stats.cut_off.add(task_id)
            stats.running.add(busy)  # its body runs here again: not an end left unwritten

            await close_unrecorded_ends(app, stats)

            after = {j.lock: j for j in await app.job_manager.list_jobs_async(queue=dispatch.QUEUE)}
            assert after[cut].status == "failed"  # its lock is free for the job that resumes it
            assert after[busy].status == "doing"
            assert stats.cut_off == {cut, busy}  # release_cut_off resumes ``cut`` and queues it once
            assert list(stats.unrecorded.values()) == [(busy, jobs[busy].attempts)]  # looked at again later
    finally:
        await store.close()
