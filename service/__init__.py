"""The queue of Checks: the contract between the producers (bot, web API) and the consumers (workers).

``bot/``, ``workers/`` and the web service depend on ``side`` and on this small package, never on
each other: producers store a Check and queue its id here (:func:`service.queue.submit`); the
job function is named by its dotted path (``workers.jobs.run_check``), so nothing here imports
the workers or loads a model.
"""

__all__ = []
