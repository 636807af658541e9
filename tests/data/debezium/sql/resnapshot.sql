-- resnapshot: the statements of each phase, separated by the capture
-- script's phase markers (lines starting with "-- @phase").

-- @phase pre: rows before the first snapshot
INSERT INTO public.orders (order_id, status, amount, created_at) VALUES
    (1, 'new', 10.00, '2026-03-01 10:00:00'),
    (2, 'new', 20.00, '2026-03-01 10:01:00'),
    (3, 'new', 30.00, '2026-03-01 10:02:00');

-- @phase stream1: streamed by the first slot
UPDATE public.orders SET status = 'paid' WHERE order_id = 1;
INSERT INTO public.orders (order_id, status, amount, created_at) VALUES (4, 'new', 40.00, '2026-03-01 10:03:00');

-- @phase gap: while no slot exists (connector deleted, slot dropped):
-- never streamed; only the second snapshot shows the result
UPDATE public.orders SET status = 'shipped' WHERE order_id = 2;
DELETE FROM public.orders WHERE order_id = 3;
INSERT INTO public.orders (order_id, status, amount, created_at) VALUES (5, 'new', 50.00, '2026-03-01 10:04:00');
UPDATE public.orders SET amount = 41.00 WHERE order_id = 4;

-- @phase stream2: streamed by the second slot, after its snapshot
UPDATE public.orders SET status = 'shipped' WHERE order_id = 1;
