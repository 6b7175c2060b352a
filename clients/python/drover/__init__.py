"""Drover for data teams: makes written as Python functions, served to populate-worker as HTTP
function makes, and a client that schedules, populates, follows runs and manages errors.

Standard library only; Python 3.10 or later.
"""

from .client import RUN_STATES, STATUSES, Client, DroverError, Job, KeyFailure, PopulateError, Progress, Run
from .functions import ComputedTable, FunctionServer, Pipeline
from .progress import ProgressLine, format_line

__all__ = [
    "STATUSES",
    "RUN_STATES",
    "Client",
    "ComputedTable",
    "DroverError",
    "FunctionServer",
    "Job",
    "KeyFailure",
    "Pipeline",
    "PopulateError",
    "Progress",
    "ProgressLine",
    "Run",
    "format_line",
]
