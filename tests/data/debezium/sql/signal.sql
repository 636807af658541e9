-- Debezium's signal table (signal.data.collection=public.dbz_signal), as
-- Debezium's documentation defines it. An INSERT of type execute-snapshot
-- starts an incremental snapshot; Debezium itself inserts the
-- snapshot-window-open/-close watermark rows. It must be in the publication
-- (table.include.list), or the INSERT is never decoded; owned by
-- shop_owners like every captured table (CREATE PUBLICATION ... FOR TABLE
-- needs ownership).
CREATE TABLE public.dbz_signal (
    id   varchar(42) PRIMARY KEY,
    type varchar(32) NOT NULL,
    data varchar(2048)
);
ALTER TABLE public.dbz_signal OWNER TO shop_owners;
