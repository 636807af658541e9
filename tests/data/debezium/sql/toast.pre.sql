-- toast_unchanged: rows before the snapshot. The notes are 80 md5 hex
-- digests (2560 characters): incompressible enough that pglz gives up, so
-- PostgreSQL moves them out of line into the TOAST table.
ALTER TABLE public.orders REPLICA IDENTITY DEFAULT;
INSERT INTO public.orders (order_id, status, amount, note, created_at, paid)
SELECT 1, 'new', 20.00, string_agg(md5('note-1-' || g), '' ORDER BY g), '2026-02-01 10:00:00', false
FROM generate_series(1, 80) g;
INSERT INTO public.orders (order_id, status, amount, note, created_at, paid)
    VALUES (2, 'new', 5.00, 'short note, stored inline', '2026-02-01 10:05:00', false);
