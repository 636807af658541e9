-- The concurrent load of the incremental-snapshot fixtures: one session,
-- fx.n iterations, each its own transaction (COMMIT inside DO), fx.sleep
-- seconds apart. Iteration i works on key k = (i * 389) % fx.keys + 1 (389
-- is prime to 2000, so the keys are distinct and spread over the table):
--   i % 5 = 0  delete k
--   i % 5 = 1  insert: odd tens re-insert the key deleted by iteration i-1,
--              others a new key fx.newbase + i (above the snapshot's last key)
--   i % 5 = 2  update every column of k (note NULL on every third)
--   i % 5 = 3  update the row inserted by iteration i-2
--   i % 5 = 4  update label and qty of k
-- Keys in fx.held (rows the held transactions have locked) are left alone,
-- so the load never waits for them.
DO $$
DECLARE
    n     int := current_setting('fx.n')::int;
    nkeys int := current_setting('fx.keys')::int;
    base  int := current_setting('fx.newbase')::int;
    pause float8 := current_setting('fx.sleep')::float8;
    held  int[] := string_to_array(current_setting('fx.held'), ',')::int[];
    k     int;
    kd    int;
BEGIN
    FOR i IN 1..n LOOP
        k := (i * 389) % nkeys + 1;
        kd := ((i - 1) * 389) % nkeys + 1;
        CONTINUE WHEN k = ANY (held) OR kd = ANY (held);
        CASE i % 5
        WHEN 0 THEN
            DELETE FROM public.items WHERE item_id = k;
        WHEN 1 THEN
            INSERT INTO public.items (item_id, label, qty, price, note)
            VALUES (CASE WHEN i % 20 = 11 THEN kd ELSE base + i END, 'new ' || i, i % 13, i / 4.0, 'inserted')
            ON CONFLICT (item_id) DO NOTHING;
        WHEN 2 THEN
            UPDATE public.items SET label = 'upd ' || i, qty = qty + 1, price = price + 0.01,
                   note = CASE WHEN i % 3 = 0 THEN NULL ELSE 'u, "' || i || '"' END
            WHERE item_id = k;
        WHEN 3 THEN
            UPDATE public.items SET qty = qty - 1, note = 'touched' WHERE item_id = base + i - 2;
        ELSE
            UPDATE public.items SET label = 'upd ' || i, qty = qty + 1 WHERE item_id = k;
        END CASE;
        COMMIT;
        PERFORM pg_sleep(pause);
    END LOOP;
END
$$;
