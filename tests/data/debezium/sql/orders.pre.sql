-- Rows present before the connector is registered: they arrive as the
-- initial snapshot (op "r"). Used by snapshot_stream, precise_decimal and
-- schemas_enabled.
INSERT INTO public.orders (order_id, status, amount, note, created_at, paid, weight_kg, shipped_at) VALUES
    (1, 'paid', 25.00, 'first order', '2026-01-15 10:00:00.123456', true, 1.250, '2026-01-16 08:30:00+00'),
    (2, 'paid', 10.00, NULL, '2026-01-15 11:00:00', true, NULL, NULL),
    (3, 'new', 60.00, 'gift', '2026-01-15 12:00:00', false, 0.5, NULL);
