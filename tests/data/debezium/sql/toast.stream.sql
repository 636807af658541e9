-- toast_unchanged: changes once the connector streams.

-- another column of the row with a TOASTed note changes: note arrives as
-- "__debezium_unavailable_value"
UPDATE public.orders SET status = 'paid', paid = true WHERE order_id = 1;
-- the TOASTed column itself changes: its new value arrives in full
UPDATE public.orders
SET note = (SELECT string_agg(md5('note-1-v2-' || g), '' ORDER BY g) FROM generate_series(1, 80) g)
WHERE order_id = 1;
-- and again an update that leaves it alone
UPDATE public.orders SET amount = 21.00 WHERE order_id = 1;
-- a short (inline) note is always sent, changed or not
UPDATE public.orders SET status = 'paid' WHERE order_id = 2;
-- an insert carries the whole TOASTed value
INSERT INTO public.orders (order_id, status, amount, note, created_at, paid)
SELECT 3, 'new', 7.00, string_agg(md5('note-3-' || g), '' ORDER BY g), '2026-02-01 11:00:00', false
FROM generate_series(1, 80) g;
-- a delete under REPLICA IDENTITY DEFAULT: before holds the key only
DELETE FROM public.orders WHERE order_id = 3;
