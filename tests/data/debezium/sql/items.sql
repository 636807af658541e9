-- The table the incremental-snapshot fixtures backfill: :rows rows (psql
-- -v rows=N), keys 1..N. Its values cover the text forms the replica's CSV
-- export must reproduce exactly: NULL, the empty string, a comma and quotes;
-- price is NUMERIC(10,2), sent as PostgreSQL's text with
-- decimal.handling.mode=string.
CREATE TABLE public.items (
    item_id int PRIMARY KEY,
    label   text,
    qty     int NOT NULL DEFAULT 0,
    price   numeric(10,2),
    note    text
);
ALTER TABLE public.items OWNER TO shop_owners;

INSERT INTO public.items (item_id, label, qty, price, note)
SELECT i, 'item ' || i, i % 17, (i * 7 % 10000) / 100.0,
       CASE WHEN i % 50 = 0 THEN NULL
            WHEN i % 50 = 1 THEN ''
            WHEN i % 50 = 2 THEN 'comma, and "quotes"'
            ELSE 'v0' END
FROM generate_series(1, :rows) i;
