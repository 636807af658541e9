-- Changes made once the connector streams (each statement is its own
-- transaction unless inside BEGIN/COMMIT). Used by snapshot_stream,
-- precise_decimal and schemas_enabled.

-- insert (op "c")
INSERT INTO public.orders (order_id, status, amount, note, created_at, paid, weight_kg, shipped_at)
    VALUES (4, 'new', 15.00, NULL, '2026-01-16 09:00:00', false, 2, NULL);
-- insert with NULL in every nullable column; status has a default ('new')
-- that must NOT replace the NULL (value.converter.replace.null.with.default=false)
INSERT INTO public.orders (order_id, status, amount, note, created_at, paid, weight_kg, shipped_at)
    VALUES (5, NULL, NULL, NULL, '2026-01-16 09:30:00', NULL, NULL, NULL);
-- one statement inserting two rows
INSERT INTO public.orders (order_id, status, amount, created_at) VALUES
    (6, 'new', 0.01, '2026-01-16 10:00:00'),
    (7, 'new', 99999999.99, '2026-01-16 10:00:01');
-- updates (op "u"; before is null under REPLICA IDENTITY DEFAULT)
UPDATE public.orders SET status = 'shipped', shipped_at = '2026-01-17 07:00:00+00' WHERE order_id = 1;
UPDATE public.orders SET amount = 61.99, note = NULL WHERE order_id = 3;
-- two changes of one row in one transaction
BEGIN;
UPDATE public.orders SET status = 'paid', paid = true WHERE order_id = 4;
UPDATE public.orders SET amount = 16.50 WHERE order_id = 4;
COMMIT;
-- negative values
UPDATE public.orders SET amount = -5.25, weight_kg = -0.001 WHERE order_id = 5;
-- delete (op "d", before holds the key only) followed by a tombstone
DELETE FROM public.orders WHERE order_id = 2;
-- primary-key update: delete of 3, tombstone of 3, create of 30
UPDATE public.orders SET order_id = 30 WHERE order_id = 3;
-- a value set back to NULL
UPDATE public.orders SET status = NULL WHERE order_id = 6;
