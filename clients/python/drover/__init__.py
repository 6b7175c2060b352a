"""Drover for data teams: makes written as Python functions, served to populate-worker as HTTP
function makes, and a client that schedules, populates, follows runs and manages errors.

Standard library only; Python 3.10 or later.
"""

__version__ = "0.1.0"

from .client import RUN_STATES, STATUSES, Client, Job, KeyFailure, Progress, Run
from .errors import DroverConnectionError, DroverError, IncompatibleWorker, PopulateError, ProblemError, WaitTimeout
from .functions import ComputedTable, FunctionServer, Pipeline
from .progress import ProgressLine, TqdmBar, format_counts, format_line, format_summary, progress_bar
from .signature import SignatureError, sign, verify

__all__ = [
    "STATUSES",
    "RUN_STATES",
    "Client",
    "ComputedTable",
    "DroverConnectionError",
    "DroverError",
    "FunctionServer",
    "IncompatibleWorker",
    "Job",
    "KeyFailure",
    "Pipeline",
    "PopulateError",
    "ProblemError",
    "Progress",
    "ProgressLine",
    "Run",
    "SignatureError",
    "TqdmBar",
    "WaitTimeout",
    "format_counts",
    "format_line",
    "format_summary",
    "progress_bar",
    "sign",
    "verify",
]
