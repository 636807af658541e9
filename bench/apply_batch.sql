-- The pipeline design document's apply step (Step 2), adapted to public.items.
--
-- cdc_events models the topic as a table of raw messages in delivery order (kafka_offset is the line
-- number in the events file, 1-based); apply_batch(from, to) reduces the messages of one micro-batch
-- to the newest event per key by LSN and MERGEs it into items_replica with the guard
-- s.lsn > t.source_lsn; deletes are soft deletes that keep the LSN. Only the column list differs from
-- the document. peer_pg.py loads the events, then times the CALLs alone.

CREATE TABLE IF NOT EXISTS cdc_events (kafka_offset bigint PRIMARY KEY, msg_key bigint, value jsonb);

DROP VIEW IF EXISTS items_current;
DROP TABLE IF EXISTS items_replica;
DROP TABLE IF EXISTS apply_state;

CREATE TABLE items_replica (
  id bigint PRIMARY KEY, customer_id int, status text, amount numeric(12, 2), note text,
  updated_at text,
  source_lsn bigint NOT NULL, is_deleted boolean NOT NULL DEFAULT false);
CREATE VIEW items_current AS
  SELECT id, customer_id, status, amount, note, updated_at FROM items_replica WHERE NOT is_deleted;
CREATE TABLE apply_state (consumer text PRIMARY KEY, last_offset bigint);
INSERT INTO apply_state VALUES ('items_replica', 0);

CREATE OR REPLACE PROCEDURE apply_batch(from_offset bigint, to_offset bigint)
LANGUAGE sql AS $$
  MERGE INTO items_replica AS t
  USING (
    SELECT DISTINCT ON (key_id) key_id, op, customer_id, status, amount, note, updated_at, lsn
    FROM (
      SELECT coalesce((value -> 'after' ->> 'id')::bigint, (value -> 'before' ->> 'id')::bigint) AS key_id,
             value ->> 'op' AS op,
             (value -> 'after' ->> 'customer_id')::int AS customer_id,
             value -> 'after' ->> 'status' AS status,
             (value -> 'after' ->> 'amount')::numeric(12, 2) AS amount,
             value -> 'after' ->> 'note' AS note,
             value -> 'after' ->> 'updated_at' AS updated_at,
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
    UPDATE SET customer_id = s.customer_id, status = s.status, amount = s.amount, note = s.note,
               updated_at = s.updated_at, source_lsn = s.lsn, is_deleted = false
  WHEN NOT MATCHED AND s.op = 'd' THEN
    INSERT (id, source_lsn, is_deleted) VALUES (s.key_id, s.lsn, true)
  WHEN NOT MATCHED THEN
    INSERT (id, customer_id, status, amount, note, updated_at, source_lsn)
    VALUES (s.key_id, s.customer_id, s.status, s.amount, s.note, s.updated_at, s.lsn);
  UPDATE apply_state SET last_offset = greatest(last_offset, to_offset) WHERE consumer = 'items_replica';
$$;
