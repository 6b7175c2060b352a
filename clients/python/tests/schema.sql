-- Target tables of the test pipeline (tests/pipeline.py), computed from populate-worker's
-- example_signal as the example pipelines are. populate-worker's TestPythonClient creates them
-- in the populate_worker schema of its test database before the worker starts.
CREATE TABLE py_signal_square (
    signal_id bigint PRIMARY KEY REFERENCES example_signal ON DELETE CASCADE,
    square    bigint NOT NULL,
    label     text   NOT NULL
);

CREATE TABLE py_signal_slow (
    signal_id bigint PRIMARY KEY REFERENCES example_signal ON DELETE CASCADE,
    half      double precision NOT NULL
);
