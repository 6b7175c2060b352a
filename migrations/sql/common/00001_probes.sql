-- Probes prove the cross-service queue pattern. Every service schema gets these tables: probes a
-- service sent (and the acknowledgements that came back), and probes it received.

-- +goose Up
CREATE TABLE probes (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    target     text        NOT NULL,
    sent_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    arrived_at timestamptz,
    acked_at   timestamptz
);

CREATE TABLE probe_arrivals (
    origin     text        NOT NULL,
    probe_id   bigint      NOT NULL,
    sent_at    timestamptz NOT NULL,
    arrived_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (origin, probe_id)
);

-- +goose Down
DROP TABLE probe_arrivals;
DROP TABLE probes;
