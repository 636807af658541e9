-- The pipeline design document's apply step (Step 2), for one table of the benchmark's row shapes.
--
-- cdc_events models the topic as a table of raw messages in delivery order (kafka_offset is the line
-- number in the events file, 1-based); apply_batch(from, to) reduces the messages of one micro-batch
-- to the newest event per key by LSN and MERGEs it into <table>_replica with the guard
-- s.lsn > t.source_lsn; deletes are soft deletes that keep the LSN. Only the column lists differ from
-- the document. peer_pg.py loads the events, then times the CALLs alone.
--
-- This is a template: peer_pg.py replaces each placeholder (NAME between double braces) from the
-- columns of one of gen.py's SHAPES (the key `id` first, then the others in table order with the
-- type the replica keeps them as):
--   table           the source table's name: items (the medium shape), items_narrow, items_wide
--   column_defs     "customer_id int, status text, amount numeric(12, 2), ..." (non-key columns)
--   columns         "customer_id, status, amount, ..."
--   extracts        "(value -> 'after' ->> 'customer_id')::int AS customer_id, ..." (no cast for text)
--   set_list        "customer_id = s.customer_id, ..."
--   s_columns       "s.customer_id, s.status, ..."
-- For items the result is the procedure of the design document adapted to items, word for word
-- (but for line breaks).

CREATE TABLE IF NOT EXISTS cdc_events (kafka_offset bigint PRIMARY KEY, msg_key bigint, value jsonb);

DROP VIEW IF EXISTS {{table}}_current;
DROP TABLE IF EXISTS {{table}}_replica;
DROP TABLE IF EXISTS apply_state;

CREATE TABLE {{table}}_replica (
  id bigint PRIMARY KEY, {{column_defs}},
  source_lsn bigint NOT NULL, is_deleted boolean NOT NULL DEFAULT false);
CREATE VIEW {{table}}_current AS
  SELECT id, {{columns}} FROM {{table}}_replica WHERE NOT is_deleted;
CREATE TABLE apply_state (consumer text PRIMARY KEY, last_offset bigint);
INSERT INTO apply_state VALUES ('{{table}}_replica', 0);

CREATE OR REPLACE PROCEDURE apply_batch(from_offset bigint, to_offset bigint)
LANGUAGE sql AS $$
  MERGE INTO {{table}}_replica AS t
  USING (
    SELECT DISTINCT ON (key_id) key_id, op, {{columns}}, lsn
    FROM (
      SELECT coalesce((value -> 'after' ->> 'id')::bigint, (value -> 'before' ->> 'id')::bigint) AS key_id,
             value ->> 'op' AS op,
             {{extracts}},
             (value -> 'source' ->> 'lsn')::bigint AS lsn
      FROM cdc_events
      WHERE kafka_offset > from_offset AND kafka_offset <= to_offset
        AND value IS NOT NULL                       -- tombstones carry no change
    ) e
    ORDER BY key_id, lsn DESC
  ) AS s
  ON t.id = s.key_id
  WHEN MATCHED AND s.lsn > t.source_lsn AND s.op = 'd' THEN
    UPDATE SET is_deleted = true, source_lsn = s.lsn
  WHEN MATCHED AND s.lsn > t.source_lsn THEN
    UPDATE SET {{set_list}}, source_lsn = s.lsn, is_deleted = false
  WHEN NOT MATCHED AND s.op = 'd' THEN
    INSERT (id, source_lsn, is_deleted) VALUES (s.key_id, s.lsn, true)
  WHEN NOT MATCHED THEN
    INSERT (id, {{columns}}, source_lsn)
    VALUES (s.key_id, {{s_columns}}, s.lsn);
  UPDATE apply_state SET last_offset = greatest(last_offset, to_offset) WHERE consumer = '{{table}}_replica';
$$;
